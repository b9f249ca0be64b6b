# Sourced by scripts/check-windows and scripts/dist (from the checkout's
# root): what builds for x86_64-pc-windows-gnu on Linux and runs it under
# Wine 8.0. Debian's Rust with std's source (-Zbuild-std, as
# scripts/check-macos does; rustup's targets need a network this machine
# may not have), mingw's linker, Debian's Wine. Everything lands in
# target/windows/ (the builds, the Wine prefix).
#
#   windows_cross_ready   installs what is missing; false when it cannot
#   windows_cross_env     exports the build's and Wine's environment
#   windows_prefix        the Wine prefix, made once, with the DLL Wine lacks
windows_target=x86_64-pc-windows-gnu
windows_out=$PWD/target/windows
wine=/usr/lib/wine/wine64
. scripts/debian-rust.sh

windows_cross_ready() {
  # /usr/bin/clippy-driver by its path: rustup's proxy on PATH is no stand-in (its sysroot has no std source).
  debian_rust_ready /usr/bin/clippy-driver:rust-web-clippy x86_64-w64-mingw32-gcc:gcc-mingw-w64-x86-64 \
    x86_64-w64-mingw32-objdump:binutils-mingw-w64-x86-64 "$wine:wine64"
}

windows_cross_env() {
  export WINEPREFIX=$windows_out/wine WINEARCH=win64 WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
  # Debian's cargo, cargo-clippy and clippy-driver, not rustup's proxies
  # (their sysroot has no std source).
  export PATH=/usr/bin:$PATH RUSTC_BOOTSTRAP=1 RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
  export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
  export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=$wine
  export CC_x86_64_pc_windows_gnu=x86_64-w64-mingw32-gcc AR_x86_64_pc_windows_gnu=x86_64-w64-mingw32-ar
}

windows_prefix() {
  # The prefix once (about 4 s and 700 MB), then the stand-in DLL Wine lacks.
  local dll=$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll
  if [ ! -f "$WINEPREFIX/system.reg" ]; then
    mkdir -p "$WINEPREFIX"
    "$wine" wineboot --init >/dev/null 2>&1
    /usr/lib/wine/wineserver64 -w 2>/dev/null || wineserver -w 2>/dev/null || true
  fi
  if [ ! -f "$dll" ] || [ scripts/windows/bcryptprimitives.c -nt "$dll" ]; then
    x86_64-w64-mingw32-gcc -O2 -shared -o "$dll" scripts/windows/bcryptprimitives.c -lbcrypt
  fi
}
