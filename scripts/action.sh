#!/usr/bin/env bash
# The steps of probesim's GitHub Action (action.yml at the repository's root), one subcommand
# each, so that the same commands run locally (tests/test_action.py runs them on a fixture
# repository with a stand-in for gh):
#
#   action.sh check   probesim check on the paths (or on what the render command prints), as SARIF
#                     for code scanning; its path is the step's output `sarif`
#   action.sh diff    on a pull request: probesim diff of the base against the checked-out head,
#                     the Markdown appended to the job's summary and, with comment: true, one
#                     comment on the pull request, found by its marker and updated in place
#
# The action's inputs come as environment variables: PROBESIM_PATHS (one a line, or separated by
# spaces), PROBESIM_RENDER, PROBESIM_SCENARIO, PROBESIM_FAIL_ON (comma-separated --fail-on
# values), PROBESIM_ARGS and PROBESIM_CHECK_ARGS (more arguments, shell-quoted, for diff and for
# check), PROBESIM_CHECK_FAIL_ON, PROBESIM_COMMENT, PROBESIM_RULES_URL (else the action's own
# docs/rules.md: PROBESIM_ACTION_REPOSITORY at PROBESIM_ACTION_REF); and the pull request's:
# PROBESIM_BASE_SHA, PROBESIM_PR. GitHub's own: GITHUB_EVENT_NAME, GITHUB_REPOSITORY,
# GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, RUNNER_TEMP; gh reads GH_TOKEN.
set -euo pipefail

MARKER='<!-- probesim-diff -->'
tmp="${RUNNER_TEMP:-${TMPDIR:-/tmp}}"
read -r -d '' -a paths <<<"${PROBESIM_PATHS:-.}" || true
[ "${#paths[@]}" -gt 0 ] || paths=(.)

# Workflow authors write these inputs as they would a command line's arguments.
eval "diff_args=(${PROBESIM_ARGS:-})"
eval "check_args=(${PROBESIM_CHECK_ARGS:-})"
scenario_args=()
[ -z "${PROBESIM_SCENARIO:-}" ] || scenario_args=(--scenario "$PROBESIM_SCENARIO")

output() {  # a step output, when GitHub reads them
    [ -z "${GITHUB_OUTPUT:-}" ] || echo "$1=$2" >>"$GITHUB_OUTPUT"
}

run_check() {
    local sarif="$tmp/probesim.sarif" targets
    if [ -n "${PROBESIM_RENDER:-}" ]; then
        targets=("$tmp/probesim-rendered.yaml")
        bash -c "$PROBESIM_RENDER" >"${targets[0]}"
    else
        targets=("${paths[@]}")
    fi
    output sarif "$sarif"
    # Exit 2 (input that does not parse) fails the step; the SARIF is written first, for upload.
    probesim check "${targets[@]}" "${scenario_args[@]}" --format sarif --output "$sarif" \
        --fail-on "${PROBESIM_CHECK_FAIL_ON:-never}" "${check_args[@]}"
}

# The id of the pull request's comment holding the marker, if any (gh api's pages of comments).
find_comment() {
    gh api --paginate "repos/$GITHUB_REPOSITORY/issues/$PROBESIM_PR/comments" | MARKER="$MARKER" python3 -c '
import json, os, sys
text, at, marker = sys.stdin.read(), 0, os.environ["MARKER"]
decoder = json.JSONDecoder()
while at < len(text):
    if text[at].isspace():
        at += 1
        continue
    page, at = decoder.raw_decode(text, at)
    for c in page:
        if marker in (c.get("body") or ""):
            print(c["id"])
            sys.exit(0)
'
}

comment() {
    local body="$1" id
    id="$(find_comment)"
    if [ -n "$id" ]; then
        gh api --method PATCH "repos/$GITHUB_REPOSITORY/issues/comments/$id" -F "body=@$body" >/dev/null
        echo "probesim diff: updated the pull request's comment $id"
    else
        gh api --method POST "repos/$GITHUB_REPOSITORY/issues/$PROBESIM_PR/comments" -F "body=@$body" >/dev/null
        echo "probesim diff: commented on the pull request"
    fi
}

run_diff() {
    case "${GITHUB_EVENT_NAME:-}" in
    pull_request | pull_request_target) ;;
    *)
        echo "probesim diff: runs on pull requests (this is ${GITHUB_EVENT_NAME:-no event}): nothing to compare"
        return 0
        ;;
    esac
    local base="${PROBESIM_BASE_SHA:?the pull request base commit (PROBESIM_BASE_SHA)}"
    # actions/checkout fetches one commit by default: the base's is fetched when missing.
    git cat-file -e "$base^{commit}" 2>/dev/null || git fetch --no-tags --depth=1 origin "$base"
    local md="$tmp/probesim-diff.md" fail_on=() render_args=() rules_url="${PROBESIM_RULES_URL:-}"
    local v
    for v in ${PROBESIM_FAIL_ON//,/ }; do fail_on+=(--fail-on "$v"); done
    [ -z "${PROBESIM_RENDER:-}" ] || render_args=(--render "$PROBESIM_RENDER")
    if [ -z "$rules_url" ] && [ -n "${PROBESIM_ACTION_REPOSITORY:-}" ] && [ -n "${PROBESIM_ACTION_REF:-}" ]; then
        rules_url="https://github.com/$PROBESIM_ACTION_REPOSITORY/blob/$PROBESIM_ACTION_REF/docs/rules.md"
    fi
    [ -n "$rules_url" ] || rules_url=docs/rules.md
    rm -f "$md"
    local code=0
    probesim diff --git "$base..HEAD" "${render_args[@]}" "${scenario_args[@]}" "${fail_on[@]}" \
        --rules-url "$rules_url" --format markdown --output "$md" "${diff_args[@]}" -- "${paths[@]}" || code=$?
    output exit-code "$code"
    if [ ! -s "$md" ]; then
        printf '%s\n### probesim diff could not read the change (exit %s)\n\nSee the step'"'"'s log.\n' \
            "$MARKER" "$code" >"$md"
    fi
    output markdown "$md"
    [ -z "${GITHUB_STEP_SUMMARY:-}" ] || cat "$md" >>"$GITHUB_STEP_SUMMARY"
    if [ "${PROBESIM_COMMENT:-false}" = true ]; then
        comment "$md"
    fi
    return "$code"
}

case "${1:-}" in
check) run_check ;;
diff) run_diff ;;
*)
    echo "usage: $0 check|diff" >&2
    exit 2
    ;;
esac
