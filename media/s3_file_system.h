// The S3 store (media/remote_file_system.h has the contract): s3://bucket/key over S3's REST
// API (HEAD and range GET of an object, ListObjectsV2), signed with AWS Signature V4 by libcurl
// (CURLOPT_AWS_SIGV4, with x-amz-content-sha256 as S3 requires; no hand-written signing),
// addressed virtual-host style on AWS and path-style on an S3-compatible endpoint. A bucket S3
// says is in another region (x-amz-bucket-region) is signed for that region from then on.
// Credentials, region and endpoint come the AWS CLI's way (s3_config_from_environment); the
// secret key and session token are never printed, and the token is sent to its own origin only.
//
// Thread safety: as RemoteFileSystem; s3_config_from_environment() reads the environment and
// files, and may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "media/api.h"
#include "media/remote_file_system.h"

HDL_API_BEGIN
namespace hdl {

/// Where S3 requests go and how they are signed. s3_config_from_environment() fills it the way
/// the AWS CLI does.
struct S3Config {
  std::string region = "us-east-1";
  /// "": AWS (virtual-hosted "https://<bucket>.s3.<region>.amazonaws.com/<key>"); else an
  /// S3-compatible store's base URL ("http://127.0.0.1:9000"), addressed path-style
  /// ("<endpoint>/<bucket>/<key>").
  std::string endpoint;
  std::string access_key_id;      ///< "": anonymous (unsigned) requests
  std::string secret_access_key;  ///< never printed
  std::string session_token;      ///< sent as x-amz-security-token when set; never printed
  /// Where the credentials came from, for messages: "the environment (AWS_ACCESS_KEY_ID)",
  /// "profile \"default\" in /home/u/.aws/credentials", "none (anonymous requests)".
  std::string credentials_source = "none (anonymous requests)";
};

/// Credentials: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), else the keys
/// of the profile AWS_PROFILE (default "default") in AWS_SHARED_CREDENTIALS_FILE (default
/// ~/.aws/credentials), then in AWS_CONFIG_FILE (default ~/.aws/config), else anonymous.
/// Region: AWS_REGION, AWS_DEFAULT_REGION, the profile's region in the config file, else
/// us-east-1. Endpoint: AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL (a user part in it is
/// dropped). Errors: kInvalidArgument for a half-set key pair or a named profile (AWS_PROFILE)
/// that no file holds; kUnsupported, naming the profile or variable and how to export the
/// credentials, for credentials the AWS CLI would get by running or asking something
/// (credential_process, role_arn/source_profile, credential_source, SSO, web identity,
/// container credentials): never anonymous requests in their place.
Result<S3Config> s3_config_from_environment();

/// s3:// URLs, signed per `config`.
std::shared_ptr<RemoteFileSystem> s3_file_system(const S3Config& config,
                                                 const RemoteOptions& options = RemoteOptions());

}  // namespace hdl
HDL_API_END
