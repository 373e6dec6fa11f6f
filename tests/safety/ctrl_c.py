"""Presses Ctrl-C in a shell script: runs `bash -c SCRIPT` as the session of
a new pseudo-terminal, waits until the file READY is not empty (the script's
program is running), types ^C on the terminal (which sends SIGINT to its
foreground process group) and prints what the terminal showed until the
script ended (20 s at most). Usage: ctrl_c.py READY SCRIPT"""
import os
import pty
import select
import sys
import time

ready, script = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.execvp("bash", ["bash", "-c", script])
deadline = time.time() + 20
shown = b""


def read_some(timeout):
    global shown
    r, _, _ = select.select([fd], [], [], timeout)
    if not r:
        return True
    try:
        b = os.read(fd, 4096)
    except OSError:  # the session ended
        return False
    shown += b
    return bool(b)


while time.time() < deadline and not (os.path.exists(ready) and os.path.getsize(ready)):
    if not read_some(0.05):
        break
time.sleep(0.5)
os.write(fd, b"\x03")
while time.time() < deadline:
    if not read_some(0.1):
        break
    if os.waitpid(pid, os.WNOHANG)[0]:
        read_some(0)
        break
else:
    shown += b"\n(the script did not end in 20 s)\n"
# Whatever is left of the session (the script, a program in a group of its
# own) ends here: a failing case leaves nothing running.
for p in os.listdir("/proc"):
    try:
        with open("/proc/%s/stat" % p) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        if int(fields[3]) == pid:  # its session is the script's
            os.kill(int(p), 9)
    except (OSError, ValueError, IndexError):
        pass
sys.stdout.write(shown.decode(errors="replace"))
