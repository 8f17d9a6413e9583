// The PTY driver: a small python3 program (stdlib pty/termios) that gives the sidecar real PTYs without a native
// Node addon (the image's Node 18 cannot load addons built for the host's Node 20).
//
// Protocol: argv = cols rows shell...; stdin → PTY input; PTY output → stdout; fd 3 carries control lines
// ("resize <cols> <rows>", "signal <n>"). The helper exits with the shell's exit status (128+n on a signal).
export const PTY_HELPER_SOURCE = String.raw`
import os, sys, fcntl, termios, struct, select, signal, errno
cols, rows, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
master, slave = os.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))
pid = os.fork()
if pid == 0:
    os.close(master)
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    for fd in (0, 1, 2):
        os.dup2(slave, fd)
    if slave > 2:
        os.close(slave)
    os.closerange(3, 256)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
os.close(slave)
for fd in (master, 0, 3):
    fl = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, fl | os.O_NONBLOCK)
pending = b''
ctrl_buf = b''
status = None
open_in, open_ctrl, open_master = True, True, True
def reap():
    global status
    if status is None:
        try:
            p, st = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            status = 0
            return
        if p == pid:
            status = os.waitstatus_to_exitcode(st)
            if status < 0:
                status = 128 - status
while True:
    rl = [fd for fd, o in ((master, open_master), (0, open_in), (3, open_ctrl)) if o]
    wl = [master] if pending and open_master else []
    try:
        r, w, _ = select.select(rl, wl, [], 0.2)
    except InterruptedError:
        continue
    if master in r:
        try:
            data = os.read(master, 65536)
        except BlockingIOError:
            data = None
        except OSError:
            data = b''
        if data == b'':
            open_master = False
        elif data:
            view = memoryview(data)
            while view:
                try:
                    n = os.write(1, view)
                    view = view[n:]
                except BlockingIOError:
                    select.select([], [1], [], 1)
                except BrokenPipeError:
                    os.killpg(pid, signal.SIGHUP)
                    sys.exit(1)
    if 0 in r:
        try:
            data = os.read(0, 65536)
        except BlockingIOError:
            data = None
        if data == b'':
            # The sidecar went away or closed the session: hang up the shell.
            open_in = False
            try:
                os.killpg(pid, signal.SIGHUP)
            except ProcessLookupError:
                pass
        elif data:
            pending += data
    if master in w and pending:
        try:
            n = os.write(master, pending)
            pending = pending[n:]
        except BlockingIOError:
            pass
        except OSError:
            pending = b''
    if 3 in r:
        try:
            data = os.read(3, 4096)
        except BlockingIOError:
            data = None
        if data == b'':
            open_ctrl = False
        elif data:
            ctrl_buf += data
            while b'\n' in ctrl_buf:
                line, ctrl_buf = ctrl_buf.split(b'\n', 1)
                parts = line.decode().split()
                try:
                    if parts[0] == 'resize':
                        c, rr = int(parts[1]), int(parts[2])
                        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack('HHHH', rr, c, 0, 0))
                    elif parts[0] == 'signal':
                        os.killpg(pid, int(parts[1]))
                except (IndexError, ValueError, OSError):
                    pass
    reap()
    # Done when the shell has exited and its output is drained (or nothing else holds the PTY).
    if status is not None and (not open_master or master not in r):
        break
try:
    os.killpg(pid, signal.SIGHUP)
except (ProcessLookupError, PermissionError):
    pass
sys.exit(status if status is not None else 0)
`;
