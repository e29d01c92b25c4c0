#!/bin/bash
# run_consumer.sh MODE SOURCE_ROOT BUILD_DIR CUDA(enabled|disabled) [CONSUMER_FLAGS]
#   MODE=subproject: builds test/consumer with ndgluon as subprojects/ndgluon, runs it.
#   MODE=pkgconfig:  installs BUILD_DIR into a scratch prefix and builds the consumer with plain
#                    g++ and `pkg-config --cflags --libs ndgluon`, then runs it.
# Both also build and run suite.cpp, the README's Boost.Test suite over the test kit
# (ndgluon-testing), where Boost.Test's compiled library is there.
set -euo pipefail
mode=$1 src=$(readlink -f "$2") build=$(readlink -f "$3") cuda=$4 consumer_flags=${5:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case $mode in
  subproject)
    mkdir -p "$work/proj/subprojects"
    cp "$src/test/consumer/main.cpp" "$src/test/consumer/suite.cpp" "$work/proj/"
    sed "s/@CUDA@/'cuda=$cuda'/" "$src/test/consumer/meson.build.in" > "$work/proj/meson.build"
    ln -s "$src" "$work/proj/subprojects/ndgluon"
    meson setup "$work/build" "$work/proj" --force-fallback-for=ndgluon > "$work/setup.log" || { cat "$work/setup.log"; exit 1; }
    ninja -C "$work/build" > "$work/ninja.log" || { cat "$work/ninja.log"; exit 1; }
    "$work/build/consumer"
    if [ -x "$work/build/suite" ]; then "$work/build/suite"; else echo "suite.cpp not built: no compiled Boost.Test"; fi
    ;;
  pkgconfig)
    meson install -C "$build" --no-rebuild --destdir "$work/root" > "$work/install.log" || { cat "$work/install.log"; exit 1; }
    prefix=$(meson introspect "$build" --buildoptions | python3 -c \
      "import json,sys; print(next(o['value'] for o in json.load(sys.stdin) if o['name']=='prefix'))")
    root="$work/root$prefix"
    pcdir=$(dirname "$(find "$root" -name ndgluon.pc | head -1)")
    export PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    flags=$(pkg-config --define-variable=prefix="$root" --cflags --libs ndgluon)
    # Every installed header compiles on its own from the installed tree: none of them needs a
    # header that is not installed.
    incdir=$(find "$root" -type d -name ndgluon -path '*/include/*' | head -1)
    (cd "$incdir" && find . -name '*.hpp' | sed 's|^\./||' | sort) > "$work/headers.txt"
    echo "$(wc -l < "$work/headers.txt") installed headers, each compiled alone"
    # shellcheck disable=SC2016
    xargs -P 2 -I{} sh -c 'echo "#include <{}>" | g++ -std=c++20 -fsyntax-only -x c++ - $0 ||
      { echo "installed header {} does not compile alone"; exit 255; }' "$(pkg-config --define-variable=prefix="$root" --cflags ndgluon)" \
      < "$work/headers.txt"
    echo "g++ main.cpp $flags $consumer_flags"
    g++ -std=c++20 $consumer_flags "$src/test/consumer/main.cpp" -o "$work/consumer" $flags
    libdir="$(dirname "$(find "$root" -name 'libndgluon.so' | head -1)")"
    LD_LIBRARY_PATH="$libdir" "$work/consumer"
    # The README's suite, through ndgluon-testing.pc (there when Boost.Test's library is).
    if pkg-config --exists ndgluon-testing; then
      testing=$(pkg-config --define-variable=prefix="$root" --cflags --libs ndgluon-testing)
      echo "g++ suite.cpp $testing $consumer_flags"
      g++ -std=c++20 $consumer_flags "$src/test/consumer/suite.cpp" -o "$work/suite" $testing
      LD_LIBRARY_PATH="$libdir" "$work/suite"
    else
      echo "ndgluon-testing.pc not installed: no compiled Boost.Test"
    fi
    ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
