# Sourced by scripts/check-macos and scripts/check-windows: Debian's Rust
# (rustc-web, cargo-web) with std's source (rust-web-src), at least the
# workspace's rust-version, so that -Zbuild-std can build std for a target
# rustup did not install. Debian's main archive may hold an older rustc-web
# than its security archive, and a machine's package lists may be stale, so
# an old one is upgraded after an update (std's source comes with it).
#
#   debian_rust_ready PACKAGE...   installs what is missing, with the extra
#                                  Debian packages named; false when it cannot.
min=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -1)
debian_rust() { /usr/bin/rustc --version 2>/dev/null | awk '{print $2}'; }
debian_rust_new_enough() {
  local v
  v=$(debian_rust)
  [ -n "$v" ] && [ -x /usr/bin/cargo ] &&
    [ "$(printf '%s\n%s\n' "$min" "$v" | sort -V | head -1)" = "$min" ] &&
    [ -d "/usr/src/rustc-$v/library/std" ]
}
# Each extra argument is "COMMAND:PACKAGE": the package is installed when the
# command is missing.
debian_rust_ready() {
  local need=() spec
  debian_rust_new_enough || need+=(rustc-web cargo-web rust-web-src)
  for spec in "$@"; do
    command -v "${spec%%:*}" >/dev/null 2>&1 || [ -x "${spec%%:*}" ] || need+=("${spec#*:}")
  done
  [ ${#need[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 || return 1
  { apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 && debian_rust_new_enough; } ||
    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 && debian_rust_new_enough; }
}
