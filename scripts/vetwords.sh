#!/bin/sh
# vetwords.sh: fail, with file:line, where docs, comments, help text or
# output speak of how the code was made rather than what it does: work
# sessions, issue numbers, roadmaps, goals, superseded results, helpers,
# TODOs, or files outside the repository (a user's clone has only the
# repository). Run from the repository root; `make vet` runs it.
set -eu

pattern='\bsessions?\b|\bissues? #?[0-9]+|\broadmaps?\b|\bgoals?\b|\bsuperseded\b|\.\./shared|\bTODO\b|\bhelpers?\b'

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	files=$(git ls-files -z --cached --others --exclude-standard -- '*.go' '*.md' 'cmd/tegrl/help/*.txt' 'Makefile' | xargs -0 -r ls -d 2>/dev/null)
else
	files=$(find . -name .git -prune -o \( -name '*.go' -o -name '*.md' -o -path './cmd/tegrl/help/*.txt' -o -name Makefile \) -type f -print)
fi
[ -n "$files" ] || exit 0

hits=$(printf '%s\n' "$files" | xargs -r grep -nHiE "$pattern" | grep -vE '\.Helper\(\)|[A-Za-z]+_test\.go:[0-9]+:\s*(tb|t|b|f)\.Helper' || true)
if [ -n "$hits" ]; then
	printf '%s\n' "$hits"
	echo "vetwords: the lines above speak of sessions, issues, roadmaps, goals, helpers, TODOs or ../shared; say what the code does instead" >&2
	exit 1
fi
