#!/bin/bash
# gpu_archs.sh SOURCE_ROOT: `meson setup` of ndgluon with CUDA reads CUDAARCHS (when -Dgpu_archs is
# not given) in CMake's forms and compiles each architecture from its own PTX; a list naming no
# architecture, a bad one or native beside others is an error naming CUDAARCHS. Skipped (77)
# without nvcc.
set -uo pipefail
src=$(readlink -f "$1")
command -v nvcc > /dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "no nvcc: skipped"; exit 77; }
export PATH="$PATH:/usr/local/cuda/bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
setup() {  # setup CUDAARCHS: meson setup's output in $work/log, its flags in $work/flags
  rm -rf "$work/b"
  CUDAARCHS=$1 meson setup "$work/b" "$src" -Dcuda=enabled -Dtests=false -Dtutorials=false -Dbenchmarks=false \
    > "$work/log" 2>&1
  local rc=$?
  grep -o -- "-gencode=[^ ']*\|-arch=[a-z-]*" "$work/b/build.ninja" 2>/dev/null | sort -u | tr '\n' ' ' > "$work/flags"
  return $rc
}
expect_flags() {  # expect_flags CUDAARCHS WANTED-FLAGS (sorted, space-separated)
  if ! setup "$1"; then echo "FAIL: CUDAARCHS='$1': meson setup failed"; tail -5 "$work/log"; failed=1; return; fi
  if [ "$(cat "$work/flags")" != "$2 " ]; then
    echo "FAIL: CUDAARCHS='$1': got '$(cat "$work/flags")', want '$2'"; failed=1
  else
    echo "ok: CUDAARCHS='$1': $2"
  fi
}
expect_error() {  # expect_error CUDAARCHS TEXT
  if setup "$1"; then echo "FAIL: CUDAARCHS='$1' was accepted"; failed=1; return; fi
  if ! grep -q -- "$2" "$work/log"; then echo "FAIL: CUDAARCHS='$1': no '$2' in"; tail -3 "$work/log"; failed=1
  else echo "ok: CUDAARCHS='$1' refused: $(grep -o 'ERROR: .*' "$work/log" | head -1)"; fi
}
expect_flags "" "-gencode=arch=compute_80,code=[sm_80] -gencode=arch=compute_90,code=[sm_90,compute_90]"
expect_flags "86-real;90a" "-gencode=arch=compute_86,code=[sm_86] -gencode=arch=compute_90a,code=[sm_90a,compute_90a]"
expect_flags "native" "-arch=native"
expect_error ";" 'CUDAARCHS ";" names no GPU architecture'
expect_error "x9" 'GPU architecture "x9" (from CUDAARCHS "x9") is not a compute capability'
expect_error "80;native" 'GPU architecture "native" (from CUDAARCHS "80;native") must be given alone'
exit $failed
