#!/usr/bin/env bash
# `mpprof report` and `mpprof merge` on hand-made raw files: what a machine
# without a GPU or the CUDA toolkit does with a cluster's results. Without the
# toolkit (NO_PROFILER=1), `mpprof run` must say in one line that it needs it.
#   report_cli.sh MPPROF MAKE_REPORT WORKDIR NO_PROFILER
set -u
mpprof=$1 make_report=$2 work=$3 no_profiler=$4
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
rm -rf "$work" && mkdir -p "$work" || exit 1
"$make_report" "$work/a" >/dev/null || fail "make_report"
rm -f "$work/a/report.json"
"$mpprof" report "$work/a" >"$work/report.out" 2>&1 || fail "mpprof report: $(cat "$work/report.out")"
grep -q '"schema": "mpprof.report/1"' "$work/a/report.json" || fail "mpprof report wrote no report.json"
grep -q '^mpprof: 1 process, 101 op calls in 8 sites' "$work/report.out" || fail "summary: $(head -1 "$work/report.out")"
# `mpprof help report` and the summary name every file the report wrote (help
# left out ops.csv and plan.json).
"$mpprof" help report >"$work/help.out" || fail "mpprof help report"
for f in $(cd "$work/a" && ls | grep -vx raw); do
  grep -q "$f" "$work/help.out" || fail "mpprof help report does not name $f: $(cat "$work/help.out")"
  grep -q "^  report: .*$f" "$work/report.out" || fail "the summary does not name $f"
done

# The same run twice: merged, the copy is the same process and counted once.
cp -r "$work/a" "$work/b"
"$mpprof" merge "$work/a" "$work/b" -o "$work/c" >"$work/merge.out" 2>&1 || fail "mpprof merge: $(cat "$work/merge.out")"
[[ $(ls "$work/c/raw" | wc -l) -eq 2 ]] || fail "merge did not copy both raw files"
grep -q 'not counted twice' "$work/merge.out" || fail "merge did not name the duplicate process"
grep -q '^mpprof: 1 process, 101 op calls' "$work/merge.out" || fail "merged summary: $(cat "$work/merge.out")"
# One run named twice (another path to it) is brought once, and said (it was silent).
"$mpprof" merge "$work/a" "$work/a/" -o "$work/c2" >"$work/merge2.out" 2>&1 || fail "mpprof merge: $(cat "$work/merge2.out")"
grep -qxF "mpprof: merge: warning: $work/a and $work/a/ are one directory, given twice; its processes are counted once" \
  "$work/merge2.out" || fail "merge of one run twice: $(cat "$work/merge2.out")"
grep -q '^mpprof: 1 process, 101 op calls' "$work/merge2.out" || fail "merged summary: $(cat "$work/merge2.out")"
# A bad raw file among the inputs is skipped, named with the input it came
# from (the warning named only its copy in OUT_DIR/raw).
# A raw file cut short says what it ended before ("file ends expected a key").
mkdir -p "$work/cut/raw" && printf '{' >"$work/cut/raw/r.json" || fail "cut raw file"
"$mpprof" report "$work/cut" >/dev/null 2>"$work/cut.err"
grep -qxF "mpprof: skipping $work/cut/raw/r.json: truncated: file ends where a key was expected" \
  "$work/cut.err" || fail "a raw file cut short: $(cat "$work/cut.err")"
# Every raw file names the mpprof that wrote it; report.json's processes say
# which (they did not: a run's files could not be told from another
# version's). A file of a format version this mpprof cannot read is refused
# in one line naming both versions and the writing mpprof; with no other file,
# nothing is written and the exit status is 1.
version=$("$mpprof" --version | sed -n '1s/^mpprof //p')
mkdir -p "$work/v/raw" && sed 's/^{"schema":"mpprof.raw\/1",/{"schema":"mpprof.raw\/1","mpprof_version":"0.0.7",/' \
  "$work/a/raw/"*.json >"$work/v/raw/r.json" || fail "versioned raw file"
"$mpprof" report "$work/v" >/dev/null 2>"$work/v.err" || fail "report of a versioned raw file: $(cat "$work/v.err")"
grep -qE '"mpprof_version":[[:space:]]+"0.0.7"' "$work/v/report.json" || fail "report.json does not name the writing mpprof"
mkdir -p "$work/v2/raw" && sed 's/"mpprof.raw\/1"/"mpprof.raw\/2"/; s/"0.0.7"/"9.9.0"/' "$work/v/raw/r.json" >"$work/v2/raw/r.json" ||
  fail "raw file of another format version"
"$mpprof" report "$work/v2" >/dev/null 2>"$work/v2.err"
rc=$?
[[ $rc -eq 1 ]] || fail "a raw file of another format version: exit $rc"
grep -qxF "mpprof: skipping $work/v2/raw/r.json: schema \"mpprof.raw/2\" (written by mpprof 9.9.0) is not supported by this mpprof $version (reads mpprof.raw/1)" \
  "$work/v2.err" || fail "a raw file of another format version: $(cat "$work/v2.err")"
[[ ! -e $work/v2/report.json ]] || fail "a report was written from no readable raw file"
mkdir -p "$work/bad/raw" && echo garbage >"$work/bad/raw/r1.json" || fail "bad raw file"
"$mpprof" merge "$work/a" "$work/bad" -o "$work/mb" >"$work/mb.out" 2>"$work/mb.err" ||
  fail "merge with a bad raw file: $(cat "$work/mb.err")"
grep -qxF "mpprof: skipping $work/mb/raw/r1.json (from $work/bad/raw/r1.json): not valid JSON at byte 0 (expected a JSON object)" \
  "$work/mb.err" || fail "merge's warning of a bad raw file: $(cat "$work/mb.err")"

# An input that cannot be read, after a good one: one line naming it, exit 1,
# and nothing is brought (the good input's raw files were left in OUT_DIR/raw,
# beside a report that did not count them).
rm -f "$work/b/raw/"*.json && cp "$work/a/raw/"*.json "$work/b/raw/x.json" || fail "copy of a's raw file"
"$mpprof" merge "$work/b" "$work/none" -o "$work/c" >"$work/merge.out" 2>"$work/merge.err" &&
  fail "merge with a missing input succeeded"
[[ $(cat "$work/merge.err") == "mpprof: merge: $work/none: No such file or directory" ]] ||
  fail "merge with a missing input: $(cat "$work/merge.err")"
[[ $(ls "$work/c/raw" | wc -l) -eq 2 ]] || fail "merge with a missing input changed $work/c/raw"
"$mpprof" merge "$work/b" "$work/none" -o "$work/mn" >/dev/null 2>&1 && fail "merge with a missing input succeeded"
[[ ! -e $work/mn ]] || fail "merge with a missing input left $work/mn"

# The report library's errors, printed by the CLI as one line each.
"$mpprof" report "$work/none" >"$work/none.out" 2>"$work/none.err" && fail "report of a missing run succeeded"
[[ $(cat "$work/none.err") == "mpprof: report: $work/none: No such file or directory" ]] ||
  fail "report of a missing run: $(cat "$work/none.err")"
# A file given for OUT_DIR is named itself (it was named as FILE/raw).
"$mpprof" report "$work/a/report.json" >"$work/none.out" 2>"$work/none.err" &&
  fail "report of a file succeeded"
[[ $(cat "$work/none.err") == "mpprof: report: $work/a/report.json: Not a directory" ]] ||
  fail "report of a file: $(cat "$work/none.err")"

# A raw/ holding no raw file: nothing to report, exit 1 in one line, and the
# report already there stays as it was (it was replaced by an empty one, exit 0).
mkdir -p "$work/e/raw" && cp "$work/a/report.json" "$work/e/" || fail "copy of a's report"
"$mpprof" report "$work/e" >"$work/empty.out" 2>"$work/empty.err" && fail "report of an empty raw/ succeeded"
[[ $(cat "$work/empty.err") == "mpprof: $work/e/raw: no raw files (*.json): nothing to report" ]] ||
  fail "report of an empty raw/: $(cat "$work/empty.err")"
cmp -s "$work/a/report.json" "$work/e/report.json" || fail "report of an empty raw/ replaced the report"
# merge of inputs without raw files: the same, and no OUT_DIR is left behind.
"$mpprof" merge "$work/e" -o "$work/me" >"$work/empty.out" 2>"$work/empty.err" &&
  fail "merge of an empty raw/ succeeded"
grep -q "^mpprof: $work/me/raw: no raw files (\*.json): nothing to report$" "$work/empty.err" ||
  fail "merge of an empty raw/: $(cat "$work/empty.err")"
[[ ! -e $work/me ]] || fail "merge of an empty raw/ left $work/me"

# merge writes a new OUT_DIR: one holding anything is refused, exit 2, and
# left as it was (an earlier merge's raw files were counted in the new
# report; merging into an input rewrote it in place).
before=$(ls -lR "$work/c" "$work/a")
for out in "$work/c" "$work/a"; do
  "$mpprof" merge "$work/a" "$work/b" -o "$out" >/dev/null 2>"$work/ne.err"
  rc=$?
  [[ $rc -eq 2 ]] || fail "merge into the non-empty $out: exit $rc"
  [[ $(cat "$work/ne.err") == "mpprof: merge: $out is not empty (merge writes a new OUT_DIR)" ]] ||
    fail "merge into the non-empty $out: $(cat "$work/ne.err")"
done
[[ $(ls -lR "$work/c" "$work/a") == "$before" ]] || fail "a refused merge changed its OUT_DIR"
# A merge whose every raw file is unusable leaves nothing (its copies of them
# stayed in OUT_DIR/raw); an empty OUT_DIR the user made stays empty.
"$mpprof" merge "$work/bad" -o "$work/mbad" >/dev/null 2>&1 && fail "merge of a bad raw file succeeded"
[[ ! -e $work/mbad ]] || fail "a merge of unusable raw files left $work/mbad: $(ls -R "$work/mbad")"
mkdir "$work/mbad2" || fail "mkdir"
"$mpprof" merge "$work/bad" -o "$work/mbad2" >/dev/null 2>&1 && fail "merge of a bad raw file succeeded"
[[ -z $(ls -A "$work/mbad2") ]] || fail "a merge of unusable raw files left $(ls -R "$work/mbad2")"

# A symbolic link in DIR/raw is not read (one left there by --force, which
# deletes only regular files, brought another run into the report), and a
# DIR/raw that is one is refused.
mkdir -p "$work/l/raw" && cp "$work/a/raw/"*.json "$work/l/raw/own.json" &&
  ln -s "$work/b/raw/x.json" "$work/l/raw/link.json" || fail "link setup"
"$mpprof" report "$work/l" >"$work/l.out" 2>"$work/l.err" || fail "report beside a link: $(cat "$work/l.err")"
grep -qxF "mpprof: skipping $work/l/raw/link.json: a symbolic link: not read (raw files are mpprof's own regular files)" \
  "$work/l.err" || fail "a linked raw file: $(cat "$work/l.err")"
grep -A1 -E '"file":[[:space:]]*"link.json"' "$work/l/report.json" | grep -q 'symbolic link' ||
  fail "the skipped link is not in report.json's skipped_files"
mkdir "$work/lr" && ln -s "$work/a/raw" "$work/lr/raw" || fail "link setup"
"$mpprof" report "$work/lr" >/dev/null 2>"$work/lr.err" && fail "report through a linked raw/ succeeded"
[[ $(cat "$work/lr.err") == "mpprof: $work/lr/raw: a symbolic link: not read (raw/ is mpprof's own directory)" ]] ||
  fail "report through a linked raw/: $(cat "$work/lr.err")"
[[ ! -e $work/lr/report.json ]] || fail "report through a linked raw/ wrote a report"

# A directory that a run or a merge holds (its lock) is neither reported on,
# merged from nor merged into: the report would mix a half-written run's files.
if command -v flock >/dev/null; then
  mkdir "$work/held" && { flock "$work/held" sleep 30 >/dev/null 2>&1 & } && holder=$!
  for _ in $(seq 100); do flock -n "$work/held" true || break; sleep 0.05; done
  cp -r "$work/a/raw" "$work/held/raw" || fail "copy"
  "$mpprof" report "$work/held" >/dev/null 2>"$work/held.err"
  rc=$?
  [[ $rc -eq 2 ]] || fail "report of a held directory: exit $rc"
  [[ $(cat "$work/held.err") == "mpprof: report: $work/held is in use by another mpprof run or merge (locked); try again when it has ended" ]] ||
    fail "report of a held directory: $(cat "$work/held.err")"
  # Nor merged from (its raw files are a checkpoint's): a run's directory,
  # its raw/ itself, and a run before its first checkpoint.
  merge_held() {
    "$mpprof" merge "$1" -o "$work/heldm" >/dev/null 2>"$work/held.err"
    rc=$?
    [[ $rc -eq 2 ]] || fail "merge of held $1: exit $rc"
    [[ $(cat "$work/held.err") == "mpprof: merge: $1 is in use by another mpprof run or merge (locked); try again when it has ended" ]] ||
      fail "merge of held $1: $(cat "$work/held.err")"
    [[ ! -e $work/heldm ]] || fail "merge of held $1 made its OUT_DIR"
  }
  merge_held "$work/held"
  merge_held "$work/held/raw"
  rm -rf "$work/held/raw"
  merge_held "$work/held"
  "$mpprof" merge "$work/a" -o "$work/held" >/dev/null 2>"$work/held.err"
  rc=$?
  pkill -P "$holder" 2>/dev/null || kill "$holder" # flock's child holds the lock
  wait "$holder" 2>/dev/null
  [[ $rc -eq 2 ]] || fail "merge into a held directory: exit $rc"
  grep -q "^mpprof: merge: $work/held is in use by another mpprof run or merge (locked)" "$work/held.err" ||
    fail "merge into a held directory: $(cat "$work/held.err")"
  [[ -z $(ls -A "$work/held") ]] || fail "merge into a held directory wrote $(ls -A "$work/held")"
fi

"$mpprof" diff "$work/a" "$work/none" -o "$work/d" >"$work/diff.out" 2>"$work/diff.err" &&
  fail "diff with a missing run succeeded"
# A run that does not exist is named itself (it was told to run `mpprof
# report` on it); a directory without report.json keeps the hint.
want="mpprof: diff: $work/none: No such file or directory"
[[ $(cat "$work/diff.err") == "$want" ]] || fail "diff with a missing run: $(cat "$work/diff.err")"
mkdir -p "$work/norep" || fail "mkdir"
"$mpprof" diff "$work/a" "$work/norep" -o "$work/d" >"$work/diff.out" 2>"$work/diff.err" &&
  fail "diff with a run without report.json succeeded"
want="mpprof: diff: $work/norep/report.json: No such file or directory (run 'mpprof report $work/norep' first?)"
[[ $(cat "$work/diff.err") == "$want" ]] || fail "diff with a run without report.json: $(cat "$work/diff.err")"
# Only a missing report.json gets the hint: one that cannot be opened for
# another reason is named with that reason alone (a link loop was told to run
# `mpprof report` first).
mkdir -p "$work/loop" && ln -s report.json "$work/loop/report.json" || fail "link loop"
"$mpprof" diff "$work/a" "$work/loop" -o "$work/d" >"$work/diff.out" 2>"$work/diff.err" &&
  fail "diff with a report.json link loop succeeded"
want="mpprof: diff: $work/loop/report.json: Too many levels of symbolic links"
[[ $(cat "$work/diff.err") == "$want" ]] || fail "diff with a report.json link loop: $(cat "$work/diff.err")"
# A run compared with itself is warned about (it said nothing).
"$mpprof" diff "$work/a" "$work/a" -o "$work/dself" >"$work/diff.out" 2>"$work/diff.err" ||
  fail "diff of a run with itself: $(cat "$work/diff.err")"
grep -qxF "mpprof diff: warning: A and B are one directory ($work/a): the run is compared with itself" \
  "$work/diff.err" || fail "diff of a run with itself: $(cat "$work/diff.err")"
echo '{}' >"$work/b/report.json"
"$mpprof" diff "$work/a" "$work/b" -o "$work/d" >"$work/diff.out" 2>"$work/diff.err" &&
  fail "diff with a broken report succeeded"
want="mpprof: diff: $work/b/report.json: not an mpprof report (schema or layers/sites missing)"
[[ $(cat "$work/diff.err") == "$want" ]] || fail "diff with a broken report: $(cat "$work/diff.err")"
: >"$work/b/report.json"
"$mpprof" diff "$work/a" "$work/b" -o "$work/d" >"$work/diff.out" 2>"$work/diff.err" &&
  fail "diff with an empty report succeeded"
want="mpprof: diff: $work/b/report.json: not an mpprof report (empty file)"
[[ $(cat "$work/diff.err") == "$want" ]] || fail "diff with an empty report: $(cat "$work/diff.err")"

# A report killed before its renames (Ctrl-C) left its temporaries, each as
# large as its file, in OUT_DIR for good; the next report there removes them:
# regular files named as its own files' temporaries, never a link, nor
# another name's.
printf 'x' >"$work/a/.report.json.AbCd1234" && printf 'x' >"$work/a/.trace.json.Zz9Yy8Xx" &&
  printf 'keep' >"$work/outside" && ln -sf "$work/outside" "$work/a/.report.html.LinkLink" &&
  printf 'x' >"$work/a/.notes.txt.AbCd1234" || fail "temporaries"
"$mpprof" report "$work/a" >/dev/null 2>"$work/tmp.err" || fail "report with temporaries: $(cat "$work/tmp.err")"
left=$(cd "$work/a" && ls -A | grep '^\.' | tr '\n' ' ')
[[ $left == ".notes.txt.AbCd1234 .report.html.LinkLink " ]] || fail "temporaries left: $left"
[[ $(cat "$work/outside") == keep ]] || fail "a link's target was changed"
rm -f "$work/a/.notes.txt.AbCd1234" "$work/a/.report.html.LinkLink"

# A diff or report ended by SIGINT, SIGTERM or SIGHUP while it writes its
# files leaves no temporary (a diff's, each as large as its file, stayed in
# OUT_DIR for good: a diff writes only into a new or empty OUT_DIR), nor the
# OUT_DIR a diff made; an empty OUT_DIR given stays empty. The signal comes
# at a write's sync, by strace's fault injection. Each command starts with
# these signals at their default action (`undisturbed`): one ignored where
# the tests run (nohup: SIGHUP; a background job: SIGINT) stays ignored in
# mpprof, as it should, and would not end it.
if strace -o /dev/null true 2>/dev/null; then
  undisturbed() { env --default-signal=SIGINT,SIGTERM,SIGHUP "$@"; }
  interrupted() { # SIGNAL NTH-SYNC mpprof ARGS...
    local sig=$1 nth=$2
    shift 2
    undisturbed strace -o /dev/null -e trace=fdatasync -e inject=fdatasync:signal="$sig":when="$nth" "$@" >/dev/null 2>&1
  }
  for sig in INT TERM HUP; do
    for nth in 1 2; do
      interrupted "SIG$sig" $nth "$mpprof" diff "$work/a" "$work/a" -o "$work/dint"
      rc=$?
      [[ $rc -gt 128 ]] || fail "diff interrupted by SIG$sig at sync $nth: exit $rc"
      [[ ! -e $work/dint ]] || fail "diff interrupted by SIG$sig at sync $nth left $(ls -A "$work/dint")"
    done
  done
  mkdir "$work/dint" || fail "mkdir"
  interrupted SIGINT 2 "$mpprof" diff "$work/a" "$work/a" -o "$work/dint"
  [[ -d $work/dint && -z $(ls -A "$work/dint") ]] || fail "diff interrupted left $(ls -A "$work/dint")"
  # A merge interrupted leaves what a failed one leaves: no OUT_DIR it made,
  # an empty one given stays empty (its raw files stayed, and the same merge
  # was then refused: OUT_DIR not empty); once its report is written (the
  # directory's sync after the renames), all of it stays.
  for at in linkat fdatasync; do
    undisturbed strace -o /dev/null -e inject=$at:signal=SIGINT:when=1 "$mpprof" merge "$work/a" -o "$work/mint" >/dev/null 2>&1
    [[ $? -gt 128 ]] || fail "merge interrupted at $at: not ended by the signal"
    [[ ! -e $work/mint ]] || fail "merge interrupted at $at left $(ls -AR "$work/mint")"
  done
  mkdir "$work/mint" || fail "mkdir"
  interrupted SIGTERM 1 "$mpprof" merge "$work/a" -o "$work/mint"
  [[ -d $work/mint && -z $(ls -A "$work/mint") ]] || fail "merge interrupted left $(ls -AR "$work/mint")"
  undisturbed strace -o /dev/null -e trace=fsync -e inject=fsync:signal=SIGINT:when=1 "$mpprof" merge "$work/a" -o "$work/mint" >/dev/null 2>&1
  [[ -f $work/mint/report.json && -n $(ls "$work/mint/raw") ]] || fail "a merge interrupted after its report lost $(ls -AR "$work/mint")"
  before=$(ls -lA "$work/a")
  interrupted SIGTERM 3 "$mpprof" report "$work/a"
  [[ $? -gt 128 ]] || fail "report interrupted: not ended by the signal"
  [[ $(ls -lA "$work/a") == "$before" ]] || fail "report interrupted left $(ls -A "$work/a")"
fi

# "--" ends the options of report, merge and diff, as of run and inspect: a
# run directory named "-r" follows it (it was "unknown option '--'", exit 2).
cp -r "$work/a" "$work/-r" || fail "cp"
mpprof_abs=$(cd "$(dirname "$mpprof")" && pwd)/$(basename "$mpprof")
# A lone "-" is an operand, as for run and inspect (it was "unknown option '-'").
cp -r "$work/a" "$work/-" || fail "cp"
for cmd in "report -- -r" "merge -o dash_merge -- -r" "diff -o dash_diff -- -r a" "report -" \
  "merge - -o dash_merge2" "diff - a -o dash_diff2"; do
  # shellcheck disable=SC2086 # cmd holds the arguments
  (cd "$work" && "$mpprof_abs" $cmd >/dev/null 2>"$work/dash.err") || fail "mpprof $cmd: $(cat "$work/dash.err")"
done

# A name holding a newline or a terminal escape is named in one line, its
# control bytes escaped, in every command's error and in the raw reader's
# warnings (they were printed raw: two lines, a red terminal).
odd="$work/odd"$'\n'"name"$'\e'"[31m"
mkdir -p "$odd/raw" && : >"$odd/raw/x"$'\n'".json" || fail "odd names"
shown="$work/odd\\nname\\x1b[31m"
for cmd in "report" "diff" "merge" "run" "report-raw"; do
  case $cmd in
  report) "$mpprof" report "$odd/none" 2>"$work/odd.err" ;;
  diff) "$mpprof" diff "$odd/none" "$work/a" -o "$work/odd_diff" 2>"$work/odd.err" ;;
  merge) "$mpprof" merge "$odd/none" -o "$work/odd_merge" 2>"$work/odd.err" ;;
  run) [[ $no_profiler == 1 ]] && continue
    "$mpprof" run -o "$work/odd_run" "$odd/none" 2>"$work/odd.err" ;;
  report-raw) "$mpprof" report "$odd" 2>"$work/odd.err" ;;
  esac
  [[ $? -ne 0 ]] || fail "$cmd of an odd name succeeded"
  ! grep -q $'\e' "$work/odd.err" || fail "$cmd: a raw escape on stderr: $(cat -A "$work/odd.err")"
  case $cmd in
  report-raw) [[ $(head -1 "$work/odd.err") == "mpprof: skipping $shown/raw/x\\n.json: empty file" ]] ;;
  *) [[ $(wc -l <"$work/odd.err") -eq 1 ]] && grep -qF "$shown/none" "$work/odd.err" ;;
  esac || fail "$cmd of an odd name: $(cat -A "$work/odd.err")"
done

# A raw file or run directory named in bytes that are not UTF-8 (a file name
# is any bytes) is named in valid UTF-8 in report.json and diff.json, as
# every text from a raw file is (they were not JSON: the name's bytes as they
# were). Each byte that is not UTF-8 is replaced.
if command -v iconv >/dev/null; then
  nu="$work/nonutf8"$'\xff'
  mkdir -p "$nu/raw" && cp "$work/a/raw/"*.json "$nu/raw/caf"$'\xe9'".json" && : >"$nu/raw/x"$'\xfe'".json" ||
    fail "non-UTF-8 names"
  "$mpprof" report "$nu" >/dev/null 2>&1 || fail "report of non-UTF-8 names"
  iconv -f UTF-8 -t UTF-8 "$nu/report.json" >/dev/null 2>&1 || fail "report.json is not UTF-8"
  grep -q '"caf?.json"' "$nu/report.json" && grep -q '"x?.json"' "$nu/report.json" ||
    fail "report.json does not name the files: $(grep -a '\.json"' "$nu/report.json" | head -3)"
  rm -f "$nu/plan.json"
  "$mpprof" diff "$nu" "$work/a" -o "$work/nonutf8_diff" >/dev/null 2>&1 || fail "diff of a non-UTF-8 name"
  iconv -f UTF-8 -t UTF-8 "$work/nonutf8_diff/diff.json" >/dev/null 2>&1 || fail "diff.json is not UTF-8"
fi

# A summary that cannot be written (a full disk, a closed descriptor) fails
# the command in one line, as inspect's output does (exit 0, the summary lost).
if [[ -w /dev/full ]]; then
  for cmd in "report $work/a" "merge $work/a -o $work/full_merge" "diff $work/a $work/a -o $work/full_diff" \
    "help report" "--version"; do
    name=${cmd%% *}
    [[ $name == --version ]] && name=version
    # shellcheck disable=SC2086 # cmd holds the arguments
    "$mpprof" $cmd >/dev/full 2>"$work/full.err"
    rc=$?
    [[ $rc -eq 1 ]] || fail "mpprof $cmd >/dev/full: exit $rc"
    grep -qxF "mpprof: $name: standard output: write failed: No space left on device" "$work/full.err" ||
      fail "mpprof $cmd >/dev/full: $(cat "$work/full.err")"
  done
fi

# `mpprof help env` lists the rows every value is checked with
# (profiler/settings.c): the same variables as the README's Environment
# variables section, both ways.
readme=$(dirname "$0")/../../README.md
"$mpprof" help env >"$work/env.out" || fail "mpprof help env"
listed=$(grep -o '^  MPPROF_[A-Z_]*' "$work/env.out" | tr -d ' ' | sort -u)
documented=$(sed -n '/^## Environment variables/,/^## [^E]/p' "$readme" | grep -v 'did you mean' |
  grep -o 'MPPROF_[A-Z_]*[A-Z]' | sort -u)
[[ -n $listed && $listed == "$documented" ]] ||
  fail "help env and the README differ: $(diff <(echo "$listed") <(echo "$documented") | tr '\n' ' ')"

# An OUT_DIR that is a symbolic link to nothing is said to be one (diff said
# "File exists", merge and run "No such file or directory").
ln -s nowhere "$work/dangling" || fail "ln"
for cmd in "merge $work/a -o $work/dangling" "diff $work/a $work/a -o $work/dangling" "run -o $work/dangling /bin/true"; do
  [[ $cmd == run* && $no_profiler == 1 ]] && continue
  name=${cmd%% *}
  [[ $name == run ]] && name= || name="$name: "
  # shellcheck disable=SC2086 # cmd holds the arguments
  "$mpprof" $cmd >/dev/null 2>"$work/dangling.err" && fail "$cmd succeeded"
  [[ $(cat "$work/dangling.err") == "mpprof: ${name}cannot create $work/dangling: a symbolic link to nowhere, which does not exist" ]] ||
    fail "$cmd: $(cat "$work/dangling.err")"
done

# A command that made OUT_DIR with missing parents for nothing (a merge of no
# usable raw file, a program that cannot run) removes the parents it made
# too (they were left: empty directories), never one that was there.
mkdir -p "$work/nest0" || fail "mkdir"
"$mpprof" merge "$work/e" -o "$work/nest0/nest/a/b/" >/dev/null 2>&1 && fail "merge of an empty raw/ succeeded"
[[ -d $work/nest0 && -z $(ls -A "$work/nest0") ]] || fail "a failed merge left $(ls -R "$work/nest0")"
if [[ $no_profiler == 0 ]]; then
  "$mpprof" run -o "$work/nest0/nest/a/b" "$work/none" >/dev/null 2>&1
  [[ $? -eq 127 ]] || fail "run of a missing program: not 127"
  [[ -d $work/nest0 && -z $(ls -A "$work/nest0") ]] || fail "a run that never started left $(ls -R "$work/nest0")"
fi

if [[ $no_profiler == 1 ]]; then
  "$mpprof" run true 2>"$work/run.err" && fail "mpprof run succeeded without libmpprof.so"
  [[ $(wc -l <"$work/run.err") -eq 1 ]] && grep -q 'built without the CUDA toolkit' "$work/run.err" ||
    fail "mpprof run: $(cat "$work/run.err")"
fi
echo ok
