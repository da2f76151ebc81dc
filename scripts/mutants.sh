#!/usr/bin/env bash
# Mutation testing of the engine with cargo-mutants: each mutant is one small wrong edit of the
# code (a comparison flipped, a body replaced by a default, a match arm deleted); the suite must
# fail on it. docs/RELIABILITY.md ("Mutation testing") lists the counts and every mutant that
# survives with the reason no behaviour can tell it apart.
#
#   bash scripts/mutants.sh                  # every mutant of the listed files
#   bash scripts/mutants.sh --shard 3/8      # one slice of them (run the slices in any order)
#   bash scripts/mutants.sh --list           # the mutants, without running them
#   bash scripts/mutants.sh --in-diff D      # only the mutants in the lines a diff touches
#   bash scripts/mutants.sh --sum            # sums the slices' results under target/mutants/
#   bash scripts/mutants.sh --again          # the slices' missed and timed-out mutants, once
#                                            # more, against the tree as it is now
#                                            # (MUTANTS_AGAIN=missed: the missed ones only)
#
# MUTANTS_GROUPS="macro" (or "core") runs one group only, to run a group's slice again.
#
# Two groups, each with the tests that can see its code: breaker-core's files against the
# crate's own unit tests and its engine, metrics and config test binaries (its doctests, the
# Redis and allocation binaries are left out: slower, and they test nothing these files decide
# alone); the attribute's expansion against the facade's attribute tests and the macro
# crate's expansion cases. A shard k/n runs
# slice k of each group. Results go to target/mutants/<group>-<k>of<n>/mutants.out.
#
# Installs cargo-mutants (pinned) with `cargo install --locked` if this machine lacks it.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=27.1.0

# The engine's files, as globs relative to the workspace root.
CORE_FILES=(
    'breaker-core/src/breaker/**'
    'breaker-core/src/window/**'
    'breaker-core/src/call/**'
    'breaker-core/src/classify.rs'
    'breaker-core/src/config/wait.rs'
    'breaker-core/src/time/**'
    'breaker-core/src/registry/keyed.rs'
    'breaker-core/src/registry/keyed/**'
)
MACRO_FILES=('breaker-macros/src/expand.rs')

# Each group's tests and timeout. The core's timeout is 3x the unmutated run's (at least 60 s:
# a mutant that makes a wait endless is a timeout, counted apart from caught ones).
CORE_TESTS=(--test-package breaker-core --cargo-arg=--lib --cargo-arg=--test=engine
    --cargo-arg=--test=metrics --cargo-arg=--test=config --timeout-multiplier 3)
# The expansion's tests: the facade's attribute tests (what the expanded code does) and the
# macro crate's own `expansions` (every shape the attribute takes compiles: a mutant that asks
# a shape for a trait it lacks fails there). Its trybuild cases (`ui`, every misuse is an
# error) are left out: a minute or more per mutant. cargo-mutants builds and tests its
# unmutated baseline in the mutated package itself (breaker-macros), whatever --test-package
# says, and breaker-macros has no `attribute` test: the macro group skips the baseline and
# sets its timeout (these tests run in seconds).
MACRO_TESTS=(--test-package resilience-breaker --test-package breaker-macros
    --cargo-arg=--test=attribute --cargo-arg=--test=expansions --baseline=skip --timeout 300)

# Mutants are built in their own target directory (kept between runs: only the mutated crate
# and what depends on it is rebuilt), never in the one the tests and clippy share. With more
# than one job, each job builds in its own copy of the tree and must keep its own target
# directory there: cargo names a workspace crate's artifacts the same in every copy, so jobs
# sharing one directory overwrite each other's test binaries and test the wrong mutant.
if [ "${MUTANTS_JOBS:-1}" -gt 1 ]; then
    unset CARGO_TARGET_DIR
else
    export CARGO_TARGET_DIR=${MUTANTS_TARGET_DIR:-$PWD/target/mutants-build}
fi

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

install() {
    if [ "$(cargo mutants --version 2>/dev/null)" != "cargo-mutants $VERSION" ]; then
        echo "scripts/mutants.sh: installing cargo-mutants $VERSION (cargo install --locked)" >&2
        cargo install --locked --version "$VERSION" cargo-mutants
    fi
    if ! cargo nextest --version >/dev/null 2>&1; then
        echo "scripts/mutants.sh: installing cargo-nextest (cargo install --locked)" >&2
        cargo install --locked cargo-nextest
    fi
}

# files_args GLOB...: one `-f GLOB` per glob.
files_args() {
    local glob
    for glob in "$@"; do printf -- '-f\n%s\n' "$glob"; done
}

# run_group GROUP OUT ARGS...: runs cargo-mutants over one group (core or macro), its results
# in OUT (none with an empty OUT), with the extra arguments ARGS.
run_group() {
    local group=$1 out=$2
    shift 2
    local files tests
    if [ "$group" = core ]; then
        mapfile -t files < <(files_args "${CORE_FILES[@]}")
        tests=("${CORE_TESTS[@]}")
    else
        mapfile -t files < <(files_args "${MACRO_FILES[@]}")
        tests=("${MACRO_TESTS[@]}")
    fi
    # Every mutant built once with the mutants profile, then its tests run by nextest, which
    # runs every binary's tests side by side and stops at the first failure (most mutants are
    # caught within seconds). MUTANTS_JOBS mutants are built and tested at once (default 1).
    cargo mutants --workspace "${files[@]}" --all-features --profile mutants --no-shuffle \
        --test-tool nextest --jobs "${MUTANTS_JOBS:-1}" --minimum-test-timeout 60 \
        ${out:+--output "$out"} "$@" "${tests[@]}"
}

# each_group NAME ARGS...: runs both groups with ARGS, the results in target/mutants/<group>-NAME;
# fails if either run did (a missed mutant makes cargo-mutants fail).
each_group() {
    local name=$1 group status=0
    shift
    for group in ${MUTANTS_GROUPS:-core macro}; do
        case $group in core | macro) ;; *) echo "MUTANTS_GROUPS: unknown group $group" >&2; return 2 ;; esac
        mkdir -p "target/mutants/$group-$name"
        run_group "$group" "target/mutants/$group-$name" "$@" || status=$?
    done
    return "$status"
}

# counts DIR...: caught, missed, timeout and unviable summed over the mutants.out of DIRs, then
# the missed ones.
counts() {
    local kind total dir
    for kind in caught missed timeout unviable; do
        total=0
        for dir in "$@"; do
            [ -f "$dir/mutants.out/$kind.txt" ] || continue
            total=$((total + $(wc -l < "$dir/mutants.out/$kind.txt")))
        done
        printf '%-9s %5d\n' "$kind" "$total"
    done
    echo "missed:"
    for dir in "$@"; do
        cat "$dir/mutants.out/missed.txt" 2>/dev/null || true
    done | sort
}

# Sums the slices' results under target/mutants/, and those of --again apart.
sum() {
    shopt -s nullglob
    local slices=(target/mutants/*of*) again=(target/mutants/*-again)
    counts "${slices[@]}"
    if [ ${#again[@]} -gt 0 ]; then
        echo "again (the survivors run against the tree as it is now):"
        counts "${again[@]}"
    fi
}

# again_patterns GROUP: one regex per mutant that GROUP's slices missed or (unless
# MUTANTS_AGAIN=missed) that timed out, its line and column left free (lines may have moved
# since the slice ran). A regex can match more than one mutant (the same edit twice in one
# function), and none where the code is gone.
again_patterns() {
    shopt -s nullglob
    local kinds=(missed timeout) lists=() kind
    [ "${MUTANTS_AGAIN:-}" = missed ] && kinds=(missed)
    for kind in "${kinds[@]}"; do
        lists+=(target/mutants/"$1"-*of*/mutants.out/"$kind".txt)
    done
    [ ${#lists[@]} -gt 0 ] || return 0
    cat "${lists[@]}" | sed -E \
        -e 's/[][\\.+*?(){}|^$]/\\&/g' \
        -e 's/^([^:]*):[0-9]+:[0-9]+: /^\1:[0-9]+:[0-9]+: /' -e 's/$/$/' | sort -u
}

# Runs each group once more over the mutants its slices missed or that timed out, against the
# current tree: the counts after the tests written for them (results in <group>-again).
again() {
    local group patterns args status=0
    for group in ${MUTANTS_GROUPS:-core macro}; do
        mapfile -t patterns < <(again_patterns "$group")
        if [ ${#patterns[@]} -eq 0 ]; then
            echo "scripts/mutants.sh: no missed or timed-out $group mutant to run again" >&2
            continue
        fi
        echo "scripts/mutants.sh: $group: ${#patterns[@]} mutant(s) to run again" >&2
        args=()
        for pattern in "${patterns[@]}"; do args+=(--re "$pattern"); done
        rm -rf "target/mutants/$group-again"
        mkdir -p "target/mutants/$group-again"
        run_group "$group" "target/mutants/$group-again" "${args[@]}" || status=$?
    done
    return "$status"
}

case "${1:-}" in
--list)
    install
    run_group core "" --list
    run_group macro "" --list
    ;;
--sum) sum ;;
--again)
    install
    again || true
    sum
    ;;
--shard)
    [ $# -eq 2 ] || usage
    install
    each_group "${2/\//of}" --shard "$2" || true
    sum
    ;;
--in-diff)
    [ $# -eq 2 ] || usage
    install
    each_group diff --in-diff "$2"
    ;;
"")
    install
    each_group all || true
    sum
    ;;
*) usage ;;
esac
