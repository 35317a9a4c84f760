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

# rl_find_python VERSION ENV_NAME WHY HOW_TO_INSTALL [PREFERRED]: print the path of a working CPython
# VERSION, looked for in this order: $ENV_NAME; PREFERRED (a path) when given; pythonVERSION on
# PATH; pyenv's installed VERSION.* (under `pyenv root`, and ~/.pyenv when pyenv is not on PATH). A
# set but broken $ENV_NAME is an error, not skipped: the user asked for that interpreter. With none
# found, say what was looked for and how to get one.
rl_find_python() {
  local want=$1 env_name=$2 why=$3 how=$4 preferred=${5:-} candidate found root
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

  if [[ -n $preferred ]]; then
    if found=$(rl_probe_python "$want" "$preferred"); then
      printf '%s' "$found"
      return 0
    fi
    looked+=("$preferred: not a CPython $want that runs")
  fi

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

# rl_pip_find_links PYTHON: the find-links locations PYTHON's pip is configured with (pip.conf
# files and $PIP_FIND_LINKS), one per line. uv reads no pip configuration: a machine that keeps
# wheels on its disk for pip (here the CPU build of torch, which on PyPI is a multi-GB CUDA build)
# gives them to uv through these.
rl_pip_find_links() {
  "$1" -m pip config list 2>/dev/null |
    sed -n "s/^[^=]*\.find-links='\(.*\)'$/\1/p" | tr ' ' '\n' | sed '/^$/d' | sort -u
}

# rl_ensure_uv PYTHON: make sure uv, the venv installer, is in the user's cache at the version
# 3rdparty/requirements-uv.txt pins, installed from PyPI by PYTHON's pip (any CPython with pip
# will do: uv is one binary); set RL_UV to it. Once per version, under an flock, like a venv.
rl_ensure_uv() {
  local python=$1 requirements="$RL_REPO_ROOT/3rdparty/requirements-uv.txt" version dir
  version=$(sed -n 's/^uv==\([^[:space:]]*\)$/\1/p' "$requirements") || return 1
  if [[ -z $version ]]; then
    rl_say "error: no uv==<version> line in $requirements"
    return 1
  fi
  dir="$RL_CACHE_ROOT/uv/$version"
  RL_UV="$dir/bin/uv"
  [[ -f $dir/.complete && -x $RL_UV ]] && return 0
  mkdir -p "$(dirname "$dir")" || return 1
  (
    flock 9 || exit 1
    [[ -f $dir/.complete && -x $RL_UV ]] && exit 0
    rm -rf "$dir"
    if ! "$python" -m pip install --no-input --disable-pip-version-check --no-deps \
      --target "$dir" -r "$requirements" >"$dir.log" 2>&1; then
      rl_say "error: installing uv $version (the venv installer, 3rdparty/requirements-uv.txt)"
      rl_say "with $python -m pip failed; the end of $dir.log:"
      tail -n 30 "$dir.log" >&2
      exit 1
    fi
    touch "$dir/.complete" || exit 1
  ) 9>"$dir.lock"
}

# rl_build_venv DIR PYTHON WHAT REQUIREMENTS [UV-PIP-INSTALL-OPTIONS...]: make DIR a venv of
# PYTHON with REQUIREMENTS installed by uv (`uv venv`, `uv pip install -r`, with pip's find-links),
# unless a complete one is already there. Under an flock on DIR.lock; the .complete marker is
# written last, and a DIR without it (a build that crashed or was killed) is removed and built
# again. Installer output goes to DIR.log, and its tail to stderr on failure. With RL_VENV_SITE_FILE
# set, that .pth file is copied into the venv's site-packages before the marker. With
# RL_VENV_PURE_REQUIREMENTS and RL_VENV_PURE_PYTHON set, that second file (pure-Python wheels whose
# Requires-Python excludes PYTHON's version) is installed after REQUIREMENTS with --no-deps
# --only-binary :all: --python-version RL_VENV_PURE_PYTHON: uv has no pip's --ignore-requires-python,
# and --python-version also picks compiled wheels' tags, so only pure ones may go there.
# Every module is compiled to bytecode at install (--compile-bytecode): with PYTHONDONTWRITEBYTECODE
# set (as on these machines) Python never caches it, so each process that imports torch would
# compile its 2,300 modules again (4.0 CPU-s an import, 1.9 s compiled; Ray 1.2 s, 0.5 s).
rl_build_venv() {
  local dir=$1 python=$2 what=$3 requirements=$4 link
  shift 4
  local -a options=("$@")
  mkdir -p "$(dirname "$dir")" || return 1
  (
    flock 9 || exit 1
    # Another process may have finished it while this one waited for the lock.
    rl_venv_ready "$dir" && exit 0
    rl_say "$what in $dir (once; log: $dir.log) ..."
    rm -rf "$dir"
    rl_ensure_uv "$python" || exit 1
    while IFS= read -r link; do options+=(--find-links "$link"); done < <(rl_pip_find_links "$python")
    if ! {
      "$RL_UV" venv --no-config --python "$python" "$dir" &&
        "$RL_UV" pip install --no-config --python "$dir/bin/python" --compile-bytecode \
          "${options[@]}" -r "$requirements" &&
        if [[ -n ${RL_VENV_PURE_REQUIREMENTS:-} ]]; then
          "$RL_UV" pip install --no-config --python "$dir/bin/python" --no-deps --compile-bytecode \
            --only-binary :all: --python-version "${RL_VENV_PURE_PYTHON:?}" \
            -r "$RL_VENV_PURE_REQUIREMENTS"
        fi &&
        if [[ -n ${RL_VENV_SITE_FILE:-} ]]; then
          cp "$RL_VENV_SITE_FILE" "$("$dir/bin/python" -c \
            'import sysconfig; print(sysconfig.get_paths()["purelib"])')/"
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

# Venvs found missing by rl_plan_runtime / rl_plan_pants, built by rl_build_pending: parallel
# arrays of DIR, PYTHON, WHAT and REQUIREMENTS (rl_build_venv's arguments).
RL_PENDING_DIRS=() RL_PENDING_PYTHONS=() RL_PENDING_WHATS=() RL_PENDING_REQUIREMENTS=()

rl_pending() {
  RL_PENDING_DIRS+=("$1") RL_PENDING_PYTHONS+=("$2") RL_PENDING_WHATS+=("$3")
  RL_PENDING_REQUIREMENTS+=("$4")
}

# rl_build_pending: build the planned venvs, all at once (each is mostly waiting on downloads
# and disk, so two build in about the time of the larger); fails if any failed, after all ended.
rl_build_pending() {
  local count=${#RL_PENDING_DIRS[@]} index failed=0
  local -a pids=()
  [[ $count -gt 0 ]] || return 0
  # One uv for all, installed before they start (each would otherwise wait on its lock).
  rl_ensure_uv "${RL_PENDING_PYTHONS[0]}" || return 1
  for ((index = 0; index < count; index++)); do
    rl_build_venv "${RL_PENDING_DIRS[index]}" "${RL_PENDING_PYTHONS[index]}" \
      "${RL_PENDING_WHATS[index]}" "${RL_PENDING_REQUIREMENTS[index]}" &
    pids+=("$!")
  done
  for index in "${pids[@]}"; do wait "$index" || failed=1; done
  RL_PENDING_DIRS=() RL_PENDING_PYTHONS=() RL_PENDING_WHATS=() RL_PENDING_REQUIREMENTS=()
  return "$failed"
}

# rl_runtime_python: print the CPython 3.11 the project runtime is built from (or say why there is
# none). The OS's CPython first: Debian's and Ubuntu's are built with profile-guided and link-time
# optimization, the interpreter linked into the executable; pyenv's default build is neither (no
# --enable-optimizations, a shared libpython), and runs preflight with 14% more instructions, 11 to
# 15% slower (benchmarks/preflight_throughput.py; docs/plans.md).
rl_runtime_python() {
  rl_find_python 3.11 RLAUNCH_PYTHON311 "the project runtime needs CPython 3.11" \
    "pyenv install 3.11 (https://github.com/pyenv/pyenv), or your OS's python3.11 and python3.11-venv packages" \
    /usr/bin/python3.11
}

# rl_plan_runtime: the project runtime (CPython 3.11 venv with 3rdparty/requirements.lock); set
# RL_RUNTIME_PYTHON to its interpreter and, when it is not built yet, find CPython 3.11 (or say
# why not) and plan its build (rl_build_pending). The project itself is not installed into it
# (checkouts share it): callers put <repo>/src on PYTHONPATH.
rl_plan_runtime() {
  local lock="$RL_REPO_ROOT/3rdparty/requirements.lock" sha dir python
  sha=$(rl_short_sha "$lock") || return 1
  dir="$RL_CACHE_ROOT/runtime/$sha"
  if ! rl_venv_ready "$dir"; then
    python=$(rl_runtime_python) || return 1
    rl_pending "$dir" "$python" \
      "installing project runtime (CPython 3.11, 3rdparty/requirements.lock)" "$lock"
  fi
  # shellcheck disable=SC2034 # read by the scripts that source this file
  RL_RUNTIME_PYTHON="$dir/bin/python"
}

# rl_plan_pants: the venv that runs Pants (CPython 3.9, the pins of 3rdparty/requirements-pants.txt,
# for the pants_version in pants.toml); set RL_PANTS_VENV to it and, when it is not built yet, find
# CPython 3.9 (or say why not) and plan its build (rl_build_pending).
rl_plan_pants() {
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
    rl_pending "$dir" "$python" "creating Pants $version venv" "$requirements"
  fi
  # shellcheck disable=SC2034 # read by the scripts that source this file
  RL_PANTS_VENV="$dir"
}

# rl_ensure_runtime, rl_ensure_pants: plan one venv and build it if missing.
rl_ensure_runtime() { rl_plan_runtime && rl_build_pending; }
rl_ensure_pants() { rl_plan_pants && rl_build_pending; }
