#!/usr/bin/env bash
# libhdl exports its API and nothing else (media/api.h): every dynamic symbol it defines is a
# name in namespace hdl (or its typeinfo, vtable, thunks). Fails listing any other export, e.g.
# a libstdc++ template instantiation, nlohmann-json or the CUDA runtime.
# Usage: exports.sh path/to/libhdl.so
set -euo pipefail
lib=${1:?usage: exports.sh LIBHDL}
syms=$(nm -D --defined-only --demangle "$lib" | cut -d' ' -f3-)
total=$(printf '%s\n' "$syms" | grep -c . || true)
allowed='^((typeinfo( name)?|vtable|VTT|construction vtable|guard variable|(non-)?virtual thunk) (for|to) )?hdl::'
others=$(printf '%s\n' "$syms" | grep -Ev "$allowed" | grep . || true)
for must in 'hdl::Pipeline::next()' 'typeinfo for hdl::DataError'; do
  # A here-string, not a pipe: grep -q exits at the first match, and under pipefail the writer's
  # SIGPIPE would read as "not exported" once the symbol list outgrows the pipe buffer.
  grep -F -- "$must" <<<"$syms" >/dev/null || { echo "FAIL: $lib does not export $must"; exit 1; }
done
if [ -n "$others" ]; then
  echo "FAIL: $lib exports $(printf '%s\n' "$others" | wc -l) of its $total symbols outside namespace hdl:"
  printf '%s\n' "$others" | head -40
  exit 1
fi
echo "ok: $lib exports $total symbols, all in namespace hdl"
