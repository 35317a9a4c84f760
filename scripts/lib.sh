# shellcheck shell=bash
# Helpers shared by ./pants and scripts/runtime (sourced, never executed): find a CPython of a given
# minor version, and build a venv once per input digest under the user's cache, safely when several
# processes (or several checkouts) ask for it at the same time or a previous build died half-way.

RL_CACHE_ROOT="${XDG_CACHE_HOME:-${HOME:?set HOME or XDG_CACHE_HOME}/.cache}/rlaunch"
RL_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

rl_say() { printf '%s\n' "$*" >&2; }

# rl_short_sha FILE: the first 12 hex digits of FILE's sha256.
rl_short_sha() {
  local sum
  sum=$(sha256sum "$1") || return 1
  printf '%s' "${sum:0:12}"
}

# rl_venv_ready DIR: the venv at DIR was built to the end and its interpreter still runs.
# (`-x` follows the bin/python symlink, so a removed base interpreter makes the venv stale.)
rl_venv_ready() { [[ -f $1/.complete && -x $1/bin/python ]]; }

# rl_probe_python VERSION CANDIDATE: print CANDIDATE's real executable when it runs and is CPython
# VERSION (e.g. 3.9). A pyenv shim for a version that is not active fails here, as it should.
rl_probe_python() {
  local want=$1 candidate=$2 out
  [[ -n $candidate ]] || return 1
  out=$("$candidate" -c 'import platform, sys
print("%d.%d %s %s" % (sys.version_info[0], sys.version_info[1],
                       platform.python_implementation(), sys.executable))' 2>/dev/null) || return 1
  [[ $out == "$want CPython /"* ]] || return 1
  printf '%s' "${out#"$want CPython "}"
}

# rl_find_python VERSION ENV_NAME WHY HOW_TO_INSTALL: print the path of a working CPython VERSION,
# looked for in this order: $ENV_NAME; pythonVERSION on PATH; pyenv's installed VERSION.* (under
# `pyenv root`, and ~/.pyenv when pyenv is not on PATH). A set but broken $ENV_NAME is an error, not
# skipped: the user asked for that interpreter. With none found, say what was looked for and how to
# get one.
rl_find_python() {
  local want=$1 env_name=$2 why=$3 how=$4 candidate found root
  local -a looked=() roots=()
  local from_env=${!env_name:-}
  if [[ -n $from_env ]]; then
    if found=$(rl_probe_python "$want" "$from_env"); then
      printf '%s' "$found"
      return 0
    fi
    rl_say "error: $why, and $env_name=$from_env is not a working CPython $want interpreter."
    rl_say "Point $env_name at one (e.g. .../bin/python$want), or unset it to look for python$want"
    rl_say "on PATH and in pyenv. To install CPython $want: $how"
    return 1
  fi
  looked+=("\$$env_name: not set")

  if candidate=$(command -v "python$want" 2>/dev/null); then
    if found=$(rl_probe_python "$want" "$candidate"); then
      printf '%s' "$found"
      return 0
    fi
    looked+=("python$want on PATH: $candidate does not run as CPython $want (an inactive pyenv shim?)")
  else
    looked+=("python$want on PATH: not found")
  fi

  if command -v pyenv >/dev/null 2>&1 && root=$(pyenv root 2>/dev/null) && [[ -n $root ]]; then
    roots+=("$root")
  else
    looked+=("pyenv on PATH: not found")
  fi
  if [[ -n ${HOME:-} && ( ${#roots[@]} -eq 0 || ${roots[0]} != "$HOME/.pyenv" ) ]]; then
    roots+=("$HOME/.pyenv")
  fi
  for root in "${roots[@]}"; do
    # Newest patch release first.
    while IFS= read -r candidate; do
      if found=$(rl_probe_python "$want" "$candidate"); then
        printf '%s' "$found"
        return 0
      fi
    done < <(compgen -G "$root/versions/$want.*/bin/python$want" | sort -rV)
    looked+=("pyenv versions: no $root/versions/$want.*/bin/python$want that runs as CPython $want")
  done

  rl_say "error: $why, and none was found. Looked for:"
  for candidate in "${looked[@]}"; do rl_say "  - $candidate"; done
  rl_say "To get one: $how; or set $env_name to the path of a CPython $want interpreter."
  return 1
}

# rl_build_venv DIR PYTHON WHAT REQUIREMENTS [SITE_FILE]: make DIR a venv of PYTHON with REQUIREMENTS
# installed (and SITE_FILE, a .pth file, copied into its site-packages), unless a complete one is
# already there. Under an flock on DIR.lock; the .complete marker is written
# last, and a DIR without it (a build that crashed or was killed) is removed and built again.
# Installer output goes to DIR.log, and its tail to stderr on failure.
rl_build_venv() {
  local dir=$1 python=$2 what=$3 requirements=$4 site_file=${5:-}
  mkdir -p "$(dirname "$dir")" || return 1
  (
    flock 9 || exit 1
    # Another process may have finished it while this one waited for the lock.
    rl_venv_ready "$dir" && exit 0
    rl_say "$what in $dir (once; log: $dir.log) ..."
    rm -rf "$dir"
    if ! {
      "$python" -m venv "$dir" &&
        "$dir/bin/python" -m pip install --no-input --require-virtualenv -r "$requirements" &&
        if [[ -n $site_file ]]; then
          cp "$site_file" "$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/"
        fi
    } >"$dir.log" 2>&1; then
      rl_say "error: $what failed; the end of $dir.log:"
      tail -n 30 "$dir.log" >&2
      exit 1
    fi
    touch "$dir/.complete" || exit 1
    rl_say "done: $what"
  ) 9>"$dir.lock"
}

# rl_ensure_runtime: make sure the project runtime (CPython 3.11 venv with 3rdparty/requirements.lock)
# exists; set RL_RUNTIME_PYTHON to its interpreter. The project itself is not installed into it
# (checkouts share it): callers put <repo>/src on PYTHONPATH.
rl_ensure_runtime() {
  local lock="$RL_REPO_ROOT/3rdparty/requirements.lock" sha dir python
  sha=$(rl_short_sha "$lock") || return 1
  dir="$RL_CACHE_ROOT/runtime/$sha"
  if ! rl_venv_ready "$dir"; then
    python=$(rl_find_python 3.11 RLAUNCH_PYTHON311 "the project runtime needs CPython 3.11" \
      "pyenv install 3.11 (https://github.com/pyenv/pyenv), or your OS's python3.11 and python3.11-venv packages") ||
      return 1
    rl_build_venv "$dir" "$python" "installing project runtime (CPython 3.11, 3rdparty/requirements.lock)" \
      "$lock" || return 1
  fi
  # shellcheck disable=SC2034 # read by the scripts that source this file
  RL_RUNTIME_PYTHON="$dir/bin/python"
}

# rl_ensure_pants: make sure the venv that runs Pants exists (CPython 3.9, the pins of
# 3rdparty/requirements-pants.txt, for the pants_version in pants.toml); set RL_PANTS_VENV to it.
rl_ensure_pants() {
  local requirements="$RL_REPO_ROOT/3rdparty/requirements-pants.txt" version sha dir python
  version=$(sed -n 's/^[[:space:]]*pants_version[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' \
    "$RL_REPO_ROOT/pants.toml") || return 1
  if [[ -z $version ]]; then
    rl_say "error: no pants_version = \"...\" in $RL_REPO_ROOT/pants.toml"
    return 1
  fi
  if ! grep -qxF "pantsbuild.pants==$version" "$requirements"; then
    rl_say "error: pants.toml asks for Pants $version, but 3rdparty/requirements-pants.txt does not"
    rl_say "pin pantsbuild.pants==$version: change both together."
    return 1
  fi
  sha=$(rl_short_sha "$requirements") || return 1
  dir="$RL_CACHE_ROOT/pants/$version-$sha"
  if ! rl_venv_ready "$dir"; then
    python=$(rl_find_python 3.9 PANTS_PYTHON "Pants $version runs on CPython 3.9 only" \
      "pyenv install 3.9.18 (https://github.com/pyenv/pyenv)") ||
      return 1
    rl_build_venv "$dir" "$python" "creating Pants $version venv" "$requirements" || return 1
  fi
  # shellcheck disable=SC2034 # read by the scripts that source this file
  RL_PANTS_VENV="$dir"
}
