#!/bin/bash
# check_cli.sh [--rc N|nonzero] [--match RE]... [--no-match RE]... [--creates FILE]... -- PROGRAM [ARG]...
#
# Runs PROGRAM ARG... and checks what it did: its exit code (--rc, 0 unless told), that its output
# (stdout and stderr together) matches every --match extended regular expression and none of the
# --no-match ones, and that every --creates file exists afterwards. @TMP@ in any argument stands
# for a fresh temporary folder, removed at the end. Prints the command and its output on failure.
# Exits 0 when every check holds, else 1.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

rc_expected=0
matches=() no_matches=() creates=()
while [ $# -gt 0 ]; do
  case $1 in
    --rc) rc_expected=$2; shift 2 ;;
    --match) matches+=("$2"); shift 2 ;;
    --no-match) no_matches+=("$2"); shift 2 ;;
    --creates) creates+=("${2//@TMP@/$tmp}"); shift 2 ;;
    --) shift; break ;;
    *) echo "check_cli.sh: unknown argument $1" >&2; exit 1 ;;
  esac
done
[ $# -gt 0 ] || { echo "check_cli.sh: no command after --" >&2; exit 1; }
command=("${@//@TMP@/$tmp}")

output=$("${command[@]}" 2>&1)
rc=$?
output=${output//$'\r'/$'\n'}  # a line redrawn in place (a progress bar) counts as lines of its own
failures=()
if [ "$rc_expected" = nonzero ]; then
  [ "$rc" -ne 0 ] || failures+=("exit code 0, expected non-zero")
elif [ "$rc" -ne "$rc_expected" ]; then
  failures+=("exit code $rc, expected $rc_expected")
fi
for re in ${matches[@]+"${matches[@]}"}; do
  grep -Eq -e "$re" <<< "$output" || failures+=("no line matches: $re")
done
for re in ${no_matches[@]+"${no_matches[@]}"}; do
  grep -Eq -e "$re" <<< "$output" && failures+=("a line matches, and must not: $re")
done
for file in ${creates[@]+"${creates[@]}"}; do
  [ -s "$file" ] || failures+=("$file was not written")
done

[ ${#failures[@]} -eq 0 ] && exit 0
echo "command: ${command[*]}"
echo "output:"
printf '%s\n' "$output"
printf 'FAILED: %s\n' "${failures[@]}"
exit 1
