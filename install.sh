#!/bin/sh
# Installs `ath`, the agent authorization gateway and CLI: picks the build for this OS, CPU and C library,
# downloads it with SHA256SUMS, checks the checksum (a mismatch installs nothing) and puts it at
# ${ATH_INSTALL_DIR:-$HOME/.local/bin}/ath. It never uses sudo.
#
#   curl -fsSLO https://raw.githubusercontent.com/ath-protocol/ath/main/install.sh && sh install.sh
#
# Fetched first, then run: `curl … | sh` exits 0 when the download fails (sh reads an empty script), this form
# exits non-zero. Every failure here exits 1 and installs nothing; and since the work is one function called on the
# last line, a script cut short in transfer runs nothing at all.
#
# ATH_DOWNLOAD_URL   base URL holding ath-<target> files and SHA256SUMS (default: the latest release)
# ATH_INSTALL_DIR    where `ath` goes (default: $HOME/.local/bin)
# ATH_TARGET         skip detection: linux-x64, linux-x64-musl, linux-arm64, darwin-x64, darwin-arm64, windows-x64
set -eu

base=${ATH_DOWNLOAD_URL:-https://github.com/ath-protocol/ath/releases/latest/download}
base=${base%/}
dir=${ATH_INSTALL_DIR:-${HOME:?HOME is not set: set ATH_INSTALL_DIR}/.local/bin}

say() { printf '%s\n' "$*"; }
fail() {
  printf 'install.sh: %s\n' "$*" >&2
  exit 1
}

# --- which build -------------------------------------------------------------------------------------------------
libc() {
  # glibc answers getconf; musl (Alpine) does not, and its ldd says so
  if getconf GNU_LIBC_VERSION >/dev/null 2>&1; then echo glibc; return; fi
  if ldd --version 2>&1 | grep -qi musl; then echo musl; return; fi
  for f in /lib/ld-musl-*.so.1; do
    if [ -e "$f" ]; then echo musl; return; fi
  done
  echo glibc
}

detect() {
  os=$(uname -s)
  cpu=$(uname -m)
  case "$cpu" in
    x86_64 | amd64) cpu=x64 ;;
    aarch64 | arm64) cpu=arm64 ;;
    *) fail "no build of ath for the CPU $cpu (there are x64 and arm64)" ;;
  esac
  case "$os" in
    Linux)
      if [ "$(libc)" = musl ]; then
        [ "$cpu" = x64 ] || fail "no build of ath for linux-$cpu with musl (there is linux-x64-musl)"
        echo "linux-x64-musl"
      else
        echo "linux-$cpu"
      fi
      ;;
    Darwin)
      # an x64 shell under Rosetta on Apple silicon still gets the native build
      if [ "$cpu" = x64 ] && [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || echo 0)" = 1 ]; then cpu=arm64; fi
      echo "darwin-$cpu"
      ;;
    MINGW* | MSYS* | CYGWIN*)
      [ "$cpu" = x64 ] || fail "no build of ath for windows-$cpu (there is windows-x64)"
      echo "windows-x64"
      ;;
    *) fail "no build of ath for the OS $os (there are Linux, macOS and Windows builds)" ;;
  esac
}

# --- download and check ------------------------------------------------------------------------------------------
download() { # URL FILE — fails (status 1) when the download does
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 2 -o "$2" "$1" || return 1
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1" || return 1
  else
    fail "neither curl nor wget is installed"
  fi
}

sha256() { # FILE
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | awk '{ print $1 }'
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | awk '{ print $1 }'
  elif command -v openssl >/dev/null 2>&1; then
    openssl dgst -sha256 -r "$1" | awk '{ print $1 }'
  else
    fail "no SHA-256 tool (sha256sum, shasum or openssl) to check the download with"
  fi
}

# --- the whole run, as one function called on the last line ---------------------------------------------------
main() {
  target=${ATH_TARGET:-$(detect)}
  case "$target" in
    linux-x64 | linux-x64-musl | linux-arm64 | darwin-x64 | darwin-arm64) file="ath-$target" exe=ath ;;
    windows-x64) file="ath-$target.exe" exe=ath.exe ;;
    *) fail "unknown target $target" ;;
  esac

  tmp=$(mktemp -d 2>/dev/null || mktemp -d -t ath)
  trap 'rm -rf "$tmp"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  say "downloading $base/$file"
  # the first download failing is most often no release there yet: say what works from a clone
  download "$base/$file" "$tmp/$file" ||
    fail "could not download $base/$file: nothing installed (no release there? From a clone of the repository: npx bun run release --only $target, then ATH_DOWNLOAD_URL=\"file://\$PWD/dist/release\" sh install.sh)"
  download "$base/SHA256SUMS" "$tmp/SHA256SUMS" || fail "could not download $base/SHA256SUMS: nothing installed"
  expected=$(awk -v f="$file" '$2 == f || $2 == "*" f { print $1; exit }' "$tmp/SHA256SUMS")
  [ -n "$expected" ] || fail "SHA256SUMS lists no $file: nothing installed"
  actual=$(sha256 "$tmp/$file")
  if [ "$actual" != "$expected" ]; then
    fail "checksum mismatch for $file (expected $expected, got $actual): nothing installed"
  fi

  # --- install -----------------------------------------------------------------------------------------------------
  mkdir -p "$dir" 2>/dev/null || fail "cannot create $dir: choose another directory with ATH_INSTALL_DIR=… (this script never uses sudo)"
  [ -w "$dir" ] || fail "cannot write to $dir: choose another directory with ATH_INSTALL_DIR=… (this script never uses sudo)"
  chmod 755 "$tmp/$file"
  # copy next to the destination, then rename: a running ath is never overwritten in place
  cp "$tmp/$file" "$dir/.$exe.$$" || fail "cannot write to $dir"
  mv -f "$dir/.$exe.$$" "$dir/$exe" || fail "cannot write $dir/$exe"

  if version=$("$dir/$exe" --version 2>/dev/null); then
    say "installed $dir/$exe: ath $version"
  else
    say "installed $dir/$exe (for $target; it does not run on this machine as it is: check the target)"
  fi

  case ":${PATH:-}:" in
    *":$dir:"*) say "run: ath --help" ;;
    *)
      say ""
      say "$dir is not on your PATH. Add it, e.g. for sh/bash/zsh:"
      say "  echo 'export PATH=\"$dir:\$PATH\"' >> ~/.profile && . ~/.profile"
      say "or for fish:  fish_add_path $dir"
      say "then run: ath --help"
      ;;
  esac
}

main "$@"
