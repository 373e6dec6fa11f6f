#!/bin/bash
# Safety tests (issue 14): planted links, secure execution, signals, OUT
# checks, hostile input files. One case per meson test: safety.sh CASE.
# Environment (from meson): MPP_MPPROF, MPP_LIB, MPP_PROG (safety_prog),
# MPP_TESTPROG (mpp_testprog, CUDA calls under simcuda), MPP_SIMCUDA, MPP_WORK.
set -u
case_name=$1
W=$MPP_WORK/$case_name
rm -rf "$W" && mkdir -p "$W" || exit 1
M=$MPP_MPPROF
HOST=$(hostname)

fail() { echo "FAIL ($case_name): $*" >&2; exit 1; }
skip() { echo "SKIP ($case_name): $*" >&2; exit 77; }

# A CUDA program (mpp_testprog) with libmpprof.so preloaded, under simcuda.
sim() { env LD_LIBRARY_PATH="$MPP_SIMCUDA" LD_PRELOAD="$MPP_LIB" "$@"; }
# A command with SIGINT, SIGTERM and SIGHUP at their default action: one
# ignored where the tests run (nohup: SIGHUP; a background job: SIGINT) stays
# ignored in mpprof, as it should, and would not end it.
undisturbed() { env --default-signal=SIGINT,SIGTERM,SIGHUP "$@"; }

case $case_name in
raw_writer_follows_no_link)
  # raw/ a link to another directory: nothing may land there.
  mkdir -p "$W/out" "$W/elsewhere"
  ln -s "$W/elsewhere" "$W/out/raw"
  MPPROF_OUT="$W/out" sim "$MPP_TESTPROG" gemmex >/dev/null || fail "program failed"
  [ -z "$(ls -A "$W/elsewhere")" ] || fail "raw file written through the raw/ link: $(ls -A "$W/elsewhere")"
  # The temporary's old, predictable name planted as a link to a victim file.
  rm "$W/out/raw" && mkdir "$W/out/raw"
  echo secret >"$W/victim"
  MPPROF_OUT="$W/out" W="$W" HOST="$HOST" sim sh -c \
    'ln -s "$W/victim" "$W/out/raw/.$HOST-$$.json.tmp"; ln -s "$W/victim" "$W/out/raw/$HOST-$$.json"; exec "$0" gemmex' \
    "$MPP_TESTPROG" >/dev/null || fail "program failed"
  [ "$(cat "$W/victim")" = secret ] || fail "victim overwritten through a planted link"
  n=$(find "$W/out/raw" -maxdepth 1 -type f -name "$HOST-*.json" | wc -l)
  [ "$n" = 1 ] || fail "expected one raw file (replacing the planted link), found $n"
  ;;
raw_file_readable_under_any_umask)
  # A program started with umask 0777: its raw file, and OUT and raw/ it
  # made, still have the owner's bits (the launcher of the same user reads
  # them), and no others' bits.
  MPPROF_OUT="$W/out/sub" sim sh -c 'umask 0777; exec "$0" gemmex' "$MPP_TESTPROG" >/dev/null ||
    fail "program failed"
  f=$(find "$W/out/sub/raw" -maxdepth 1 -type f -name "$HOST-*.json")
  [ -n "$f" ] || fail "no raw file"
  for p in "$W/out" "$W/out/sub" "$W/out/sub/raw"; do
    [ "$(stat -c %a "$p")" = 700 ] || fail "$p: mode $(stat -c %a "$p"), expected 700"
  done
  [ "$(stat -c %a "$f")" = 600 ] || fail "raw file mode $(stat -c %a "$f"), expected 600"
  ;;
checkpoint_follows_no_link)
  mkdir -p "$W/out/raw"
  echo secret >"$W/victim"
  env LD_LIBRARY_PATH="$MPP_SIMCUDA" LD_PRELOAD="$MPP_LIB" MPPROF_OUT="$W/out" \
    MPPROF_CHECKPOINT_S=0.05 W="$W" HOST="$HOST" sh -c \
    'ln -s "$W/victim" "$W/out/raw/.$HOST-$$.json.tmp"; exec "$0" wait' "$MPP_TESTPROG" >"$W/stdout" &
  pid=$!
  for _ in $(seq 100); do [ -n "$(ls "$W/out/raw"/*.json 2>/dev/null)" ] && break; sleep 0.05; done
  sleep 0.2
  kill -KILL $pid; wait $pid 2>/dev/null
  [ "$(cat "$W/victim")" = secret ] || fail "victim overwritten by a checkpoint"
  grep -q '"final":false' "$W/out/raw/$HOST-$pid.json" || fail "no checkpoint written"
  ;;
report_files_follow_no_link)
  mkdir -p "$W/out/raw"
  MPPROF_OUT="$W/out" sim "$MPP_TESTPROG" gemmex >/dev/null || fail "program failed"
  echo secret >"$W/victim"
  for f in report.json layers.csv trace.json report.html; do ln -s "$W/victim" "$W/out/$f"; done
  W="$W" sh -c 'for f in report.json layers.csv trace.json report.html; do
      ln -s "$W/victim" "$W/out/$f.tmp.$$"; done; exec "$0" report "$W/out"' "$M" >/dev/null 2>"$W/err" ||
    fail "report failed: $(cat "$W/err")"
  [ "$(cat "$W/victim")" = secret ] || fail "victim overwritten by the report"
  for f in report.json layers.csv trace.json report.html; do
    [ -f "$W/out/$f" ] && [ ! -L "$W/out/$f" ] || fail "$f is not a regular file"
  done
  ;;
merge_writes_no_link)
  mkdir -p "$W/a/raw" "$W/out" "$W/elsewhere"
  MPPROF_OUT="$W/a" sim "$MPP_TESTPROG" gemmex >/dev/null || fail "program failed"
  ln -s "$W/elsewhere" "$W/out/raw"
  "$M" merge "$W/a" -o "$W/out" >/dev/null 2>"$W/err"
  rc=$?
  [ -z "$(ls -A "$W/elsewhere")" ] || fail "merge wrote through the raw/ link"
  [ $rc != 0 ] || fail "merge into a linked raw/ succeeded"
  # A raw file that is a relative symbolic link is merged as its content: a
  # link would resolve elsewhere from OUT/raw.
  mkdir -p "$W/b/raw" "$W/keep"
  f=$(ls "$W/a/raw" | head -1)
  mv "$W/a/raw/$f" "$W/keep/$f"
  ln -s "../../keep/$f" "$W/b/raw/$f"
  "$M" merge "$W/b" -o "$W/out2" >/dev/null 2>"$W/err2" || fail "merge of a linked raw file: $(cat "$W/err2")"
  [ -f "$W/out2/raw/$f" ] && [ ! -L "$W/out2/raw/$f" ] || fail "OUT/raw/$f is not a regular file"
  cmp -s "$W/keep/$f" "$W/out2/raw/$f" || fail "OUT/raw/$f is not the linked file's content"
  ;;
force_deletes_only_inside_out)
  mkdir -p "$W/out" "$W/other"
  echo keep >"$W/other/precious.json"
  ln -s "$W/other" "$W/out/raw"
  "$M" -o "$W/out" --force "$MPP_PROG" sleep 0 2>"$W/err"
  rc=$?
  [ -f "$W/other/precious.json" ] || fail "--force deleted a file outside OUT"
  [ "$(ls -A "$W/other")" = precious.json ] || fail "files written outside OUT: $(ls -A "$W/other")"
  [ $rc = 2 ] || fail "exit $rc, expected 2 (raw/ is a link)"
  grep -q "raw" "$W/err" || fail "no message naming raw/: $(cat "$W/err")"
  # In the real OUT/raw: only regular raw files go, a directory or link named *.json stays.
  rm "$W/out/raw" && mkdir -p "$W/out/raw/dir.json"
  echo old >"$W/out/raw/old-1.json"
  ln -s "$W/other/precious.json" "$W/out/raw/link.json"
  echo mine >"$W/out/raw/notes.txt"
  "$M" -o "$W/out" --force "$MPP_PROG" sleep 0 2>"$W/err" || fail "--force run failed: $(cat "$W/err")"
  [ ! -e "$W/out/raw/old-1.json" ] || fail "old raw file not removed"
  [ -d "$W/out/raw/dir.json" ] && [ -f "$W/out/raw/notes.txt" ] || fail "--force removed what is not a raw file"
  [ -f "$W/other/precious.json" ] || fail "a link's target was removed"
  ;;
force_keeps_raw_files_of_a_program_that_cannot_start)
  # A program execve refuses (ENOEXEC: a binary of another architecture, a
  # binary file that is no program) though it is found and executable: the
  # earlier run's raw files were removed before that was known, and lost.
  mkdir -p "$W/out/raw"
  echo old >"$W/out/raw/old-1.json"
  printf '\0\1not a program\n' >"$W/garbage" && chmod +x "$W/garbage"
  progs=("$W/garbage")
  # The same program, its ELF header naming another machine (x86-64's is 62,
  # aarch64's 183), unless binfmt_misc runs such binaries (qemu-user).
  case $(uname -m) in x86_64) other=183 name=aarch64 ;; *) other=62 name=x86_64 ;; esac
  if ! ls /proc/sys/fs/binfmt_misc 2>/dev/null | grep -q "$name"; then
    cp "$MPP_PROG" "$W/foreign" &&
      printf "\\x$(printf %02x "$other")\\x00" | dd of="$W/foreign" bs=1 seek=18 conv=notrunc 2>/dev/null ||
      fail "foreign binary"
    progs+=("$W/foreign")
  fi
  for p in "${progs[@]}"; do
    "$M" -o "$W/out" --force "$p" 2>"$W/err"
    rc=$?
    [ $rc = 126 ] || fail "$p: exit $rc, expected 126: $(cat "$W/err")"
    [ "$(ls -A "$W/out/raw")" = old-1.json ] && [ "$(cat "$W/out/raw/old-1.json")" = old ] ||
      fail "$p: the old raw files were not kept: $(ls -A "$W/out/raw")"
    [ "$(cat "$W/err")" = "mpprof: cannot run $p: Exec format error ($W/out is left as it was)" ] ||
      fail "$p: $(cat "$W/err")"
  done
  # A program that starts: the old raw files go, and nothing is left of them,
  # already while it runs (a long run killed with mpprof kept their copies).
  # mpprof removes them once it has seen the exec, which the program may
  # outrun: the program waits for raw/ to empty (no time limit: where they
  # stay until it ends, the wait never ends and the test's timeout fails it).
  "$M" -o "$W/out" --force /bin/sh -c 'while [ -n "$(ls -A "$MPPROF_OUT/raw")" ]; do sleep 0.01; done' \
    2>"$W/err" || fail "--force run failed: $(cat "$W/err")"
  [ -z "$(ls -A "$W/out/raw")" ] || fail "left in raw/: $(ls -A "$W/out/raw")"
  ;;
force_sets_aside_raw_files_of_any_name_length)
  # Raw file names of 246 bytes and more, up to NAME_MAX (here 250, 253 with
  # a character of two bytes where the name is cut, and 255): set aside as
  # .NAME.XXXXXXXX they did not fit, and --force stopped with exit 2 ('File
  # name too long'), where such files were removed before.
  mkdir -p "$W/out/raw"
  names=("$(printf 'a%.0s' $(seq 245)).json" "$(printf 'b%.0s' $(seq 242))ééé.json"
    "$(printf 'c%.0s' $(seq 250)).json")
  for n in "${names[@]}"; do echo "old $n" >"$W/out/raw/$n" || fail "cannot make $n"; done
  expect=$(ls -A "$W/out/raw")
  printf '\0\1not a program\n' >"$W/garbage" && chmod +x "$W/garbage"
  "$M" -o "$W/out" --force "$W/garbage" 2>"$W/err"
  rc=$?
  [ $rc = 126 ] || fail "exit $rc, expected 126: $(cat "$W/err")"
  [ "$(ls -A "$W/out/raw")" = "$expect" ] || fail "the old raw files were not kept: $(ls -A "$W/out/raw")"
  for n in "${names[@]}"; do [ "$(cat "$W/out/raw/$n")" = "old $n" ] || fail "$n: not its content"; done
  "$M" -o "$W/out" --force /bin/true 2>"$W/err" || fail "--force run failed: $(cat "$W/err")"
  [ -z "$(ls -A "$W/out/raw")" ] || fail "left in raw/: $(ls -A "$W/out/raw")"
  ;;
force_keeps_raw_files_of_a_program_killed_before_it_starts)
  # The program's process ended by a signal before its execve took it (here
  # SIGKILL at its execve, by strace's fault injection on that path only;
  # Ctrl-C or the OOM killer in its first moments): the start pipe's end
  # closes as at an exec, and the old raw files set aside were removed,
  # though the program never ran.
  strace -o /dev/null true 2>/dev/null || skip "needs strace"
  mkdir -p "$W/out/raw"
  echo old >"$W/out/raw/old-1.json"
  cp "$MPP_PROG" "$W/prog" || fail "copy"
  # mpprof exits normally here, traced: LeakSanitizer (the sanitized suite)
  # cannot run under ptrace, so its check at exit is off for this command.
  env ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0" \
    strace -f -o /dev/null -P "$W/prog" -e trace=execve -e inject=execve:signal=SIGKILL \
    "$M" -o "$W/out" --force "$W/prog" 2>"$W/err"
  rc=$?
  [ $rc = 137 ] || fail "exit $rc, expected 137: $(cat "$W/err")"
  [ "$(ls -A "$W/out/raw")" = old-1.json ] && [ "$(cat "$W/out/raw/old-1.json")" = old ] ||
    fail "the old raw files were not kept: $(ls -A "$W/out/raw")"
  [ "$(cat "$W/err")" = "mpprof: $W/prog was killed by SIGKILL (signal 9) before it started ($W/out is left as it was)" ] ||
    fail "$(cat "$W/err")"
  ;;
secure_execution_is_passive)
  [ "$(id -u)" = 0 ] || skip "needs root (a setuid-root copy run by another user)"
  command -v setpriv >/dev/null || skip "needs setpriv"
  # The copy, the library and OUT where user nobody can reach them.
  d=$(mktemp -d /tmp/mpprof-secure.XXXXXX) && chmod 755 "$d"
  trap 'rm -rf "$d"' EXIT
  cp "$MPP_PROG" "$d/prog" && cp "$MPP_LIB" "$d/libmpprof.so" && chmod 755 "$d/libmpprof.so"
  chown root:root "$d/prog" && chmod 4755 "$d/prog"
  mkdir "$d/out" && chown nobody "$d/out"
  as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
  as_nobody env CUDA_INJECTION64_PATH="$d/libmpprof.so" MPPROF_OUT="$d/out" MPPROF_LOG=1 \
    "$d/prog" inject 2>"$W/err" || fail "setuid program failed: $(cat "$W/err")"
  [ -z "$(find "$d/out" -mindepth 1)" ] || fail "files written in secure-execution mode: $(find "$d/out" -mindepth 1)"
  grep -q "secure-execution" "$W/err" || fail "no secure-execution line with MPPROF_LOG: $(cat "$W/err")"
  # Without MPPROF_LOG: silent.
  as_nobody env CUDA_INJECTION64_PATH="$d/libmpprof.so" MPPROF_OUT="$d/out" "$d/prog" inject 2>"$W/err2"
  [ ! -s "$W/err2" ] || fail "output without MPPROF_LOG: $(cat "$W/err2")"
  # The launcher says so before the run.
  cp "$MPP_MPPROF" "$d/mpprof" && chmod 755 "$d/mpprof"
  as_nobody env MPPROF_LIB="$d/libmpprof.so" "$d/mpprof" -o "$d/out/run" "$d/prog" inject 2>"$W/err3"
  grep -q "setuid/setgid programs are not profiled" "$W/err3" || fail "launcher did not warn: $(cat "$W/err3")"
  [ -z "$(find "$d/out/run/raw" -type f)" ] || fail "raw file written for a setuid program"
  ;;
file_capabilities_are_named_before_the_run)
  # A program with file capabilities (setcap) that its user lacks runs in
  # secure-execution mode too: the launcher says so, as for setuid.
  [ "$(id -u)" = 0 ] || skip "needs root (a setcap copy run by another user)"
  command -v setpriv >/dev/null || skip "needs setpriv"
  command -v setcap >/dev/null || skip "needs setcap"
  d=$(mktemp -d /tmp/mpprof-caps.XXXXXX) && chmod 755 "$d"
  trap 'rm -rf "$d"' EXIT
  cp "$MPP_PROG" "$d/prog" && cp "$MPP_LIB" "$d/libmpprof.so" && cp "$MPP_MPPROF" "$d/mpprof"
  chmod 755 "$d/prog" "$d/libmpprof.so" "$d/mpprof"
  setcap cap_net_bind_service+ep "$d/prog" 2>/dev/null || skip "setcap refused here"
  mkdir "$d/out" && chown nobody "$d/out"
  setpriv --reuid=nobody --regid=nogroup --clear-groups env MPPROF_LIB="$d/libmpprof.so" \
    "$d/mpprof" -o "$d/out/run" "$d/prog" inject 2>"$W/err"
  grep -q "gains file capabilities" "$W/err" || fail "launcher did not warn: $(cat "$W/err")"
  [ -z "$(find "$d/out/run/raw" -type f)" ] || fail "raw file written for a program with file capabilities"
  # Run by root, who holds those capabilities already: profiled, no warning.
  "$d/mpprof" -o "$d/out/root" "$d/prog" inject 2>"$W/err2"
  ! grep -q "secure-execution" "$W/err2" || fail "warned for root: $(cat "$W/err2")"
  ;;
fork_loop_under_checkpoints_ends)
  # One GEMM, then 1000 forks while the checkpoint thread flushes CUPTI every
  # 10 ms. CUPTI's fork handler (simcuda's libcupti; the real CUPTI's or the
  # driver's may do the same) takes its lock before mpprof's prepare handler
  # runs and keeps it until its parent handler: a checkpoint pass that waited
  # for that lock while holding one mpprof's handler takes hung every later
  # call of the program (its fork) for ever.
  command -v timeout >/dev/null || skip "needs timeout(1)"
  want=$(env LD_LIBRARY_PATH="$MPP_SIMCUDA" "$MPP_TESTPROG" forkloop 1000) ||
    fail "program failed without mpprof"
  got=$(MPPROF_OUT="$W/out" MPPROF_CHECKPOINT_S=0.01 timeout -s KILL 60 \
    env LD_LIBRARY_PATH="$MPP_SIMCUDA" LD_PRELOAD="$MPP_LIB" "$MPP_TESTPROG" forkloop 1000)
  rc=$?
  [ $rc != 137 ] || fail "hung: killed after 60 s"
  [ $rc = 0 ] || fail "exit $rc"
  [ "$got" = "$want" ] || fail "output changed: $got (without mpprof: $want)"
  grep -q '"final":true' "$W/out/raw/$HOST-"*.json || fail "no final raw file"
  ;;
early_signal_is_not_lost)
  # SIGTERM at random moments of the launch, 200 times: always 143.
  for i in $(seq 200); do
    "$M" -o "$W/o$i" "$MPP_PROG" sleep 3 2>/dev/null &
    pid=$!
    sleep "0.00$((RANDOM % 10))"
    kill -TERM $pid 2>/dev/null
    wait $pid
    rc=$?
    [ $rc = 143 ] || fail "try $i: exit $rc, expected 143 (signal lost)"
    rm -rf "$W/o$i"
  done
  ;;
group_signal_arrives_once)
  command -v timeout >/dev/null || skip "needs timeout(1)"
  # timeout signals mpprof, then its whole process group.
  timeout -s INT 1 "$M" -o "$W/out" "$MPP_PROG" sigcount 2.5 >"$W/stdout" 2>/dev/null
  grep -q "^signals 1$" "$W/stdout" || fail "the program counted: $(cat "$W/stdout")"
  # A signal to mpprof alone is forwarded once too.
  "$M" -o "$W/out2" "$MPP_PROG" sigcount 2 >"$W/stdout2" 2>/dev/null &
  pid=$!
  sleep 0.7
  kill -INT $pid
  wait $pid
  grep -q "^signals 1$" "$W/stdout2" || fail "kill -INT: the program counted: $(cat "$W/stdout2")"
  ;;
terminal_ctrl_c_stops_the_calling_script)
  # Ctrl-C on a terminal reaches its foreground group: the program (which
  # mpprof gives the terminal), and, without mpprof, the shell script that
  # runs it, which then stops its loop. mpprof ends its own group by the
  # same signal after its report: the loop stops as it does without mpprof
  # (it went on to its next iteration).
  PY=/usr/bin/python3
  [ -x "$PY" ] || skip "needs $PY (pty)"
  CC=$(dirname "$0")/ctrl_c.py
  out=$("$PY" "$CC" "$W/ready0" "for i in 1 2; do echo r > '$W/ready0'; sleep 5; echo iter \$i; done; echo loop-finished")
  case "$out" in *loop-finished* | *"iter 2"*) skip "bash here does not stop a loop on Ctrl-C: $out" ;; esac
  out=$("$PY" "$CC" "$W/ready" "for i in 1 2; do LD_LIBRARY_PATH='$MPP_SIMCUDA' '$M' -o '$W/out'\$i --checkpoint 0.1 '$MPP_TESTPROG' wait >'$W/ready' 2>'$W/err'\$i; echo iter \$i rc=\$?; done; echo loop-finished")
  case "$out" in *loop-finished* | *"iter 2"* | *"iter 1"*) fail "the script went on after Ctrl-C: $out" ;; esac
  [ -f "$W/out1/report.json" ] || fail "no report before the signal was passed on: $(cat "$W/err1")"
  [ ! -e "$W/out2" ] || fail "the loop's second run started"
  ;;
merge_interrupted_outside_its_handler_leaves_nothing)
  # SIGINT at the merge's mkdirat of OUT_DIR/raw (the third: o, o/sub, raw),
  # before its handler knew OUT_DIR: o/sub/raw was left behind. Then at the
  # first unlinkat of a failed merge's clean-up, after the handler had
  # forgotten OUT_DIR: o/raw was left behind.
  strace -o /dev/null true 2>/dev/null || skip "needs strace"
  mkdir -p "$W/a"
  MPPROF_OUT="$W/a" sim "$MPP_TESTPROG" gemmex >/dev/null || fail "program failed"
  (cd "$W" && undisturbed strace -f -o /dev/null -e trace=mkdirat -e inject=mkdirat:signal=SIGINT:when=3 \
    "$M" merge a -o o/sub >/dev/null 2>"$W/err")
  rc=$?
  [ $rc = 130 ] || fail "exit $rc, expected 130: $(cat "$W/err")"
  [ ! -e "$W/o" ] || fail "left behind: $(find "$W/o")"
  mkdir -p "$W/bad/raw" && echo '{"schema":"mpprof.raw/1"' >"$W/bad/raw/h-1.json"
  (cd "$W" && undisturbed strace -f -o /dev/null -e trace=unlinkat -e inject=unlinkat:signal=SIGINT:when=1 \
    "$M" merge bad -o o >/dev/null 2>"$W/err")
  rc=$?
  [ $rc = 130 ] || fail "failed merge: exit $rc, expected 130: $(cat "$W/err")"
  [ ! -e "$W/o" ] || fail "failed merge: left behind: $(find "$W/o")"
  ;;
report_phase_can_be_interrupted)
  # The program fills mpprof's stderr (a pipe nobody reads): the report phase
  # then blocks writing its summary. SIGTERM must end it.
  mkfifo "$W/pipe"
  exec 3<>"$W/pipe"
  "$M" -o "$W/out" "$MPP_PROG" fillstderr 2>"$W/pipe" &
  pid=$!
  blocked=
  for _ in $(seq 200); do
    case "$(cat /proc/$pid/wchan 2>/dev/null)" in *pipe_write*) w=1 ;; *) w= ;; esac
    if [ -n "$w" ] && ! pgrep -P $pid >/dev/null; then
      blocked=1; break
    fi
    sleep 0.05
  done
  [ -n "$blocked" ] || { kill -KILL $pid; skip "mpprof never blocked on its stderr (no wchan?)"; }
  kill -TERM $pid
  for _ in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if kill -0 $pid 2>/dev/null; then kill -KILL $pid; wait $pid; fail "SIGTERM ignored in the report phase"; fi
  wait $pid
  rc=$?
  [ $rc = 143 ] || fail "exit $rc, expected 143"
  ;;
interrupted_report_phase_leaves_no_temporary)
  # SIGINT, SIGTERM or SIGHUP while the report of a run is written (here at
  # its first sync, by strace's fault injection on mpprof, not on the
  # program): the run ends by it, its raw files stay, and no temporary of
  # the report's files is left in OUT (each as large as its file).
  strace -o /dev/null true 2>/dev/null || skip "needs strace"
  for sig in SIGINT SIGTERM SIGHUP; do
    rm -rf "$W/out"
    undisturbed env LD_LIBRARY_PATH="$MPP_SIMCUDA" strace -o /dev/null -e trace=fdatasync \
      -e inject=fdatasync:signal=$sig:when=1 "$M" -o "$W/out" "$MPP_TESTPROG" gemmex >/dev/null 2>&1
    rc=$?
    [ $rc -gt 128 ] || fail "$sig: exit $rc"
    [ -n "$(ls "$W/out/raw")" ] || fail "$sig: the raw files are gone"
    left=$(cd "$W/out" && ls -A | grep -v '^raw$')
    [ -z "$left" ] || fail "$sig: left in OUT: $left"
  done
  ;;
file_size_limit_ends_no_program)
  # The program's file size limit (ulimit -f 1: 1 KiB or less) is below its
  # raw file's size: the raw file is not written, and the program runs as it
  # does without mpprof (writing past the limit sends SIGXFSZ, which ends it).
  mkdir -p "$W/out/raw"
  limited() { env LD_LIBRARY_PATH="$MPP_SIMCUDA" "$@" sh -c 'ulimit -f 1 && exec "$0" gemmex' "$MPP_TESTPROG"; }
  want=$(limited) || fail "the program failed without mpprof"
  got=$(limited LD_PRELOAD="$MPP_LIB" MPPROF_OUT="$W/out")
  rc=$?
  [ $rc = 0 ] || fail "exit $rc under mpprof, expected 0 (153: killed by SIGXFSZ)"
  [ "$got" = "$want" ] || fail "output under mpprof: '$got', without: '$want'"
  [ -z "$(ls -A "$W/out/raw")" ] || fail "files left in raw/: $(ls -A "$W/out/raw")"
  # mpprof run names the limit as a reason nothing was recorded
  sh -c 'ulimit -f 1 && exec "$@"' sh env LD_LIBRARY_PATH="$MPP_SIMCUDA" "$M" -o "$W/run" \
    "$MPP_TESTPROG" gemmex >/dev/null 2>"$W/err"
  grep -q "the file size limit, ulimit -f, is [0-9]* bytes" "$W/err" ||
    fail "mpprof run did not name the file size limit: $(cat "$W/err")"
  ;;
unwritable_out_refused_before_start)
  mkdir -p "$W/out"
  echo "not a directory" >"$W/out/raw"
  "$M" -o "$W/out" --force sh -c "touch '$W/ran'" 2>"$W/err"
  rc=$?
  [ $rc = 2 ] || fail "exit $rc, expected 2"
  [ ! -e "$W/ran" ] || fail "the program ran although OUT/raw cannot be written"
  grep -q "$W/out/raw" "$W/err" || fail "message does not name OUT/raw: $(cat "$W/err")"
  ;;
second_run_on_out_is_refused)
  "$M" -o "$W/out" "$MPP_PROG" sleep 3 2>"$W/err1" &
  pid=$!
  for _ in $(seq 100); do [ -d "$W/out/raw" ] && break; sleep 0.05; done
  sleep 0.2
  "$M" -o "$W/out" --force "$MPP_PROG" sleep 0 2>"$W/err2"
  rc=$?
  wait $pid || fail "first run failed: $(cat "$W/err1")"
  [ $rc = 2 ] || fail "second run: exit $rc, expected 2"
  grep -q "in use by another mpprof run" "$W/err2" || fail "message: $(cat "$W/err2")"
  ;;
fifo_is_skipped_not_waited_for)
  # A FIFO among the raw files and one given to inspect: skipped, no hang.
  mkdir -p "$W/out/raw"
  MPPROF_OUT="$W/out" sim "$MPP_TESTPROG" gemmex >/dev/null || fail "program failed"
  mkfifo "$W/out/raw/x.json"
  timeout 60 "$M" report "$W/out" >/dev/null 2>"$W/err"
  rc=$?
  [ $rc = 0 ] || fail "report: exit $rc (124: it hung): $(cat "$W/err")"
  grep -q "x.json: not a regular file" "$W/err" || fail "no line naming the FIFO: $(cat "$W/err")"
  # merge reads each input's command lines first (the different-programs warning)
  timeout 60 "$M" merge "$W/out" "$W/out" -o "$W/merged" >/dev/null 2>"$W/err3"
  rc=$?
  [ $rc = 0 ] || fail "merge: exit $rc (124: it hung): $(cat "$W/err3")"
  grep -q "x.json: not a regular file, skipped" "$W/err3" || fail "merge: $(cat "$W/err3")"
  [ ! -e "$W/merged/raw/x.json" ] || fail "merge brought the FIFO along"
  mkdir -p "$W/fiforun" && mkfifo "$W/fiforun/report.json"
  timeout 60 "$M" diff "$W/merged" "$W/fiforun" -o "$W/diff" >/dev/null 2>"$W/err4"
  rc=$?
  [ $rc = 1 ] || fail "diff: exit $rc, expected 1 (124: it hung): $(cat "$W/err4")"
  grep -q "fiforun/report.json: not a regular file" "$W/err4" || fail "diff: $(cat "$W/err4")"
  mkfifo "$W/fifo.npy"
  python3 -c "import struct,sys
h=b\"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\"
h+=b' '*(63-(10+len(h))%64)+b'\n'
open(sys.argv[1],'wb').write(b'\x93NUMPY\x01\x00'+struct.pack('<H',len(h))+h+struct.pack('<4f',1,2,3,4))" \
    "$W/good.npy" || skip "no python3 to write a .npy file"
  timeout 60 "$M" inspect "$W/fifo.npy" "$W/good.npy" >"$W/stdout" 2>"$W/err2"
  rc=$?
  [ $rc = 1 ] || fail "inspect: exit $rc, expected 1 (124: it hung)"
  grep -q "fifo.npy: not a regular file" "$W/err2" || fail "inspect: $(cat "$W/err2")"
  grep -q "good.npy" "$W/stdout" || fail "the other file was not inspected: $(cat "$W/stdout")"
  ;;
vfork_exec_leaves_no_memory_behind)
  # vfork + execve with an environment that keeps LD_PRELOAD and drops
  # MPPROF_OUT (CPython's subprocess): the copy carrying the settings is made
  # in the child, in the parent's memory; the parent's address space must not
  # grow with each exec (it grew 4 KiB each), nor with threads that made one
  # and ended (the copy's memory goes with its thread).
  out=$(MPPROF_OUT="$W/out" sim "$MPP_PROG" vfork 200) || fail "program failed: $out"
  read -r _ kib _ tkib <<<"$out"
  [ "$kib" -lt 64 ] || fail "address space grew by $kib KiB over 200 vfork + execve"
  [ "$tkib" -lt 64 ] || fail "address space grew by $tkib KiB over 200 threads' vfork + execve"
  ;;
cupti_of_a_program_registered_first_stays_its_own | cupti_found_by_dlsym_registered_first_stays_its_own)
  # A program that registers CUPTI activity callbacks of its own (no
  # cuptiSubscribe) before its first cuBLAS call: mpprof's start replaced
  # them, and the program saw none of its 25 kernels. It keeps them; mpprof
  # says it left CUPTI to the program. The same when the program finds the
  # activity API with dlsym on libcupti's handle, past mpprof's hooks: there
  # mpprof took no note of the registration.
  P=$MPP_CUPTI_PROG
  [ "$case_name" = cupti_of_a_program_registered_first_stays_its_own ] || P=$MPP_CUPTI_DLSYM_PROG
  plain=$(env LD_LIBRARY_PATH="$MPP_SIMCUDA" "$P" first) || fail "program failed alone"
  prof=$(MPPROF_OUT="$W/out" sim "$P" first) || fail "program failed under mpprof"
  [ "$prof" = "$plain" ] || fail "the program saw '$prof' under mpprof, '$plain' alone"
  grep -q '"cupti":{"status":"held_by_program"' "$W/out/raw/"*.json || fail "cupti status: $(grep -o '"cupti":{[^}]*' "$W/out/raw/"*.json)"
  ;;
cupti_taken_by_the_program_gives_it_its_own_records | cupti_found_by_dlsym_taken_by_the_program_gives_it_its_own_records)
  # The same program registering after five GEMMs, when mpprof's callbacks
  # are in place: it got mpprof's buffer (kernels from before it enabled
  # any) and the records mpprof had enabled (launch API records), and mpprof
  # said nothing. It sees what it sees alone; mpprof keeps the kernels before
  # and says that its records end there. The same through dlsym on
  # libcupti's handle: there mpprof's records ended silently.
  P=$MPP_CUPTI_PROG
  [ "$case_name" = cupti_taken_by_the_program_gives_it_its_own_records ] || P=$MPP_CUPTI_DLSYM_PROG
  plain=$(env LD_LIBRARY_PATH="$MPP_SIMCUDA" "$P" after) || fail "program failed alone"
  prof=$(MPPROF_OUT="$W/out" sim "$P" after) || fail "program failed under mpprof"
  [ "$prof" = "$plain" ] || fail "the program saw '$prof' under mpprof, '$plain' alone"
  grep -q '"cupti":{"status":"taken_by_program"' "$W/out/raw/"*.json || fail "cupti status: $(grep -o '"cupti":{[^}]*' "$W/out/raw/"*.json)"
  "$M" report "$W/out" >/dev/null 2>&1 || fail "report failed"
  grep -q 'kernel records incomplete: the program registered CUPTI activity callbacks' "$W/out/report.json" ||
    fail "the report does not say the kernel records are incomplete"
  ;;
cupti_of_mpprof_gets_libcuptis_own_functions)
  # mpprof looks CUPTI's functions up on libcupti's handle itself: through
  # libmpprof's dlsym, which answers such a lookup of a hooked name with the
  # hook, its own registration would be taken for the program's (it hung on
  # its own lock). A program that never calls CUPTI: mpprof's kernel records
  # arrive.
  MPPROF_OUT="$W/out" timeout 120 env LD_LIBRARY_PATH="$MPP_SIMCUDA" LD_PRELOAD="$MPP_LIB" \
    "$MPP_TESTPROG" gemmex >/dev/null
  rc=$?
  [ $rc = 0 ] || fail "program: exit $rc, expected 0 (124: it hung)"
  grep -q '"cupti":{"status":"ok"' "$W/out/raw/"*.json || fail "cupti status: $(grep -o '"cupti":{[^}]*' "$W/out/raw/"*.json)"
  grep -q '"kernel_events":\[{"site":' "$W/out/raw/"*.json || fail "no kernel records"
  ;;
*)
  fail "unknown case"
  ;;
esac
exit 0
