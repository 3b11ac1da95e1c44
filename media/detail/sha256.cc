#include "media/detail/sha256.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace hdl::detail {

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  // EVP_Digest with EVP_sha256() fails only when the library cannot allocate its context.
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr) != 1 || size != 32)
    throw std::runtime_error("sha256_hex: OpenSSL's EVP_Digest(SHA-256) failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex(2 * size, '0');
  for (unsigned int i = 0; i < size; ++i) {
    hex[2 * i] = kHex[digest[i] >> 4];
    hex[2 * i + 1] = kHex[digest[i] & 15];
  }
  return hex;
}

}  // namespace hdl::detail
