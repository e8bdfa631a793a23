//! The Docker backend's command session: one long-lived `docker exec -i` running a small
//! bash server in the container, which runs each command, lists the tree and packs
//! changed files on request, so a step costs no `docker exec` of its own.
//!
//! A `docker exec` costs about 30 ms of CPU in the client and in `runc` before anything
//! runs; a step used three (the command, the listing, the changed files). Through the
//! session a step writes three requests into one pipe.
//!
//! # Protocol
//!
//! The server ([`SERVER`], `bash -c SERVER baton WORKDIR`) says `baton-session PID\n`
//! once. Each request is a line `KIND MARKER N\n` and `N` NUL-terminated arguments;
//! `MARKER` is 128 random bits in hex, new for every request, which nothing inside the
//! container can read (a command's input is `/dev/null`).
//!
//! * `run`: the arguments are the command's argv (the limit wrapper and `bash -c`). The
//!   server answers `MARKER started\n`, starts it in a session of its own (`setsid`) with
//!   its output into a named pipe, relays that pipe until every process holding it has
//!   closed it (as a pipe to `docker exec` would), then writes `MARKER RC\n`. Before
//!   `started` nothing ran, so a session lost then is retried with a plain `docker exec`.
//! * `list`: GNU `find`'s listing of the working directory ([`listing`](crate::listing)).
//! * `tar`: a tar of the given paths of the working directory.
//!
//! `list` and `tar` answer `MARKER RC SIZE\n` and `SIZE` bytes.
//!
//! At a timeout baton kills, with one `docker exec`, every session whose leader is alive
//! but the server's (the command's, as before), and reads on to the end marker; when that
//! does not come (a process that left the command's session holds the output), the
//! session is dropped and the next command starts a new one. A command that kills the
//! server itself (`kill -9 -1` as root) ends with return code 137, as a killed
//! `docker exec` would.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::exec::{ExecOutput, ExitStatus};
use crate::output::Capture;

/// The server; see the module docs. `$1` is the working directory.
const SERVER: &str = r#"W=$1
fresh() { [ -d "$D" ] || D=$(mktemp -d /tmp/.baton-session.XXXXXX) || exit 1; }
D=
fresh
trap 'rm -rf -- "$D"' EXIT
command -v setsid >/dev/null 2>&1 || exit 1
printf 'baton-session %s\n' "$$"
n=0
while IFS=' ' read -r kind marker count; do
  args=()
  for ((i = 0; i < count; i++)); do IFS= read -r -d '' a || exit 1; args+=("$a"); done
  n=$((n + 1))
  fresh
  case $kind in
  run)
    f=$D/o$n
    mkfifo -- "$f" || exit 1
    cd -- "$W" 2>/dev/null
    printf '%s started\n' "$marker"
    setsid "${args[@]}" </dev/null >"$f" 2>&1 &
    p=$!
    cat -- "$f"
    wait "$p"
    rc=$?
    rm -f -- "$f"
    printf '%s %d\n' "$marker" "$rc";;
  list)
    (cd -- "$W" && exec find . -mindepth 1 -printf '%y %i %s %C@ %m\0%P\0%l\0') >"$D/l" 2>/dev/null
    rc=$?
    printf '%s %d %d\n' "$marker" "$rc" "$(($(wc -c <"$D/l")))"
    cat -- "$D/l";;
  tar)
    printf '%s\0' "${args[@]}" >"$D/t.list"
    tar -C "$W" --null --no-recursion --hard-dereference --ignore-failed-read -T "$D/t.list" -cf "$D/t" 2>/dev/null
    rc=$?
    printf '%s %d %d\n' "$marker" "$rc" "$(($(wc -c <"$D/t")))"
    cat -- "$D/t";;
  *) exit 1;;
  esac
done"#;

/// Runs [`WATCHER`] (`$0`) on the working directory (`$1`) with the image's Python 3.
const START_WATCHER: &str = r#"for p in python3 python; do
  command -v "$p" >/dev/null 2>&1 && exec "$p" -c "$0" "$1"
done
exit 1"#;

/// The change watcher: inotify (through `ctypes`) on every folder and file of the
/// working directory, which answers a `changes` request with the entries that may have
/// changed since the last one, in the listing's format ([`listing`](crate::listing)),
/// each named path looked at again: `G` records a path that is gone, `W` a folder walked
/// whole (its records follow). A file is watched itself too, so a write through any of
/// its links, even one outside the tree, names it. When it cannot say (the kernel's queue
/// overflowed, a watch was refused, an entry could not be read) it answers return code 1
/// and starts over with new watches, before the listing baton then takes.
pub(crate) const WATCHER: &str = r#"import ctypes, os, stat, struct, sys
L = ctypes.CDLL(None, use_errno=True)
R = os.fsencode(sys.argv[1])
M = 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x2000000
fd = -1
wds = {}
def full(rel):
    return os.path.join(R, rel) if rel else R
def watch(rel):
    w = L.inotify_add_watch(fd, full(rel), M)
    if w < 0:
        raise OSError(ctypes.get_errno(), "inotify_add_watch")
    wds[w] = rel
def rec(out, rel, st):
    m = st.st_mode
    t = b"d" if stat.S_ISDIR(m) else b"f" if stat.S_ISREG(m) else b"l" if stat.S_ISLNK(m) else b"p"
    target = os.readlink(full(rel)) if t == b"l" else b""
    ns = st.st_ctime_ns
    out += b"%s %d %d %d.%09d0 %o\0%s\0%s\0" % (t, st.st_ino, st.st_size, ns // 10**9, ns % 10**9, m & 0o7777, rel, target)
def walk(out, rel):
    watch(rel)
    for e in os.scandir(full(rel)):
        c = os.path.join(rel, e.name) if rel else e.name
        st = os.lstat(full(c))
        rec(out, c, st)
        if stat.S_ISDIR(st.st_mode):
            walk(out, c)
        elif stat.S_ISREG(st.st_mode):
            watch(c)
def reset():
    global fd
    if fd >= 0:
        os.close(fd)
    wds.clear()
    fd = L.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "inotify_init1")
    walk(bytearray(), b"")
def drain():
    dirty = set()
    while True:
        try:
            b = os.read(fd, 1 << 16)
        except BlockingIOError:
            break
        i = 0
        while i < len(b):
            wd, mask, _, n = struct.unpack_from("iIII", b, i)
            name = b[i + 16 : i + 16 + n].rstrip(b"\0")
            i += 16 + n
            if mask & 0x4000:
                return None
            if mask & 0x8000:
                wds.pop(wd, None)
                continue
            d = wds.get(wd)
            if d is None:
                return None
            dirty.add(os.path.join(d, name) if name and d else name or d)
    dirty.discard(b"")
    return dirty
def changes():
    dirty = drain()
    if dirty is None:
        reset()
        return 1, b""
    out = bytearray()
    for rel in sorted(dirty):
        try:
            st = os.lstat(full(rel))
        except (FileNotFoundError, NotADirectoryError):
            out += b"G 0 0 0 0\0%s\0\0" % rel
            continue
        rec(out, rel, st)
        if stat.S_ISDIR(st.st_mode):
            out += b"W 0 0 0 0\0%s\0\0" % rel
            walk(out, rel)
        elif stat.S_ISREG(st.st_mode):
            watch(rel)
    return 0, bytes(out)
reset()
out = sys.stdout.buffer
out.write(b"baton-session %d\n" % os.getpid())
out.flush()
inp = sys.stdin.buffer
while True:
    line = inp.readline()
    if not line:
        break
    kind, marker, n = line.split()
    for _ in range(int(n)):
        while inp.read(1) not in (b"\0", b""):
            pass
    try:
        rc, data = changes() if kind == b"changes" else (2, b"")
    except Exception:
        reset()
        rc, data = 1, b""
    out.write(b"%s %d %d\n" % (marker, rc, len(data)))
    out.write(data)
    out.flush()"#;

/// How long the server may take to start, list or pack.
const HELPER_TIMEOUT: Duration = Duration::from_secs(600);

/// After a timeout's kill, how long to wait for the end of the command's output.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// Why a request got no complete answer; the session is unusable after it.
#[derive(Debug)]
pub(crate) enum Lost {
    /// Nothing ran: use a plain `docker exec`.
    NotRun,
    /// The command ran and the session ended before its end marker.
    Ran(ExecOutput),
}

/// A running session; see the module docs.
pub(crate) struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Vec<u8>>,
    /// Received and not yet consumed.
    buf: Vec<u8>,
    /// The server's PID in the container.
    pub(crate) pid: String,
}

impl Session {
    /// Start the server with `docker exec -i` (`args`: everything between `exec` and the
    /// container, such as `-w` and `-e`); `None` when it does not start (no `setsid` or
    /// `mkfifo` in the image, say).
    pub(crate) fn start(
        program: &Path,
        args: &[String],
        container: &str,
        workdir: &str,
    ) -> Option<Session> {
        let server = [
            "bash",
            "--noprofile",
            "--norc",
            "-c",
            SERVER,
            "baton",
            workdir,
        ];
        Self::start_server(program, args, container, &server)
    }

    /// Start the change watcher ([`WATCHER`]) over `workdir` with `docker exec -i`;
    /// `None` when the image has no Python 3 or the kernel no watches to spare.
    pub(crate) fn start_watcher(program: &Path, container: &str, workdir: &str) -> Option<Session> {
        let server = [
            "bash",
            "--noprofile",
            "--norc",
            "-c",
            START_WATCHER,
            WATCHER,
            workdir,
        ];
        Self::start_server(program, &[], container, &server)
    }

    fn start_server(
        program: &Path,
        args: &[String],
        container: &str,
        server: &[&str],
    ) -> Option<Session> {
        let mut child = Command::new(program)
            .args(["exec", "-i"])
            .args(args)
            .arg(container)
            .args(server)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let stdin = child.stdin.take();
        let mut stdout = child.stdout.take()?;
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("baton-env-session".into())
            .spawn(move || {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    match stdout.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            if tx.send(buf[..n].to_vec()).is_err() {
                                break;
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
            })
            .ok()?;
        let mut s = Session {
            child,
            stdin,
            rx,
            buf: Vec::new(),
            pid: String::new(),
        };
        let hello = s.line(Instant::now() + HELPER_TIMEOUT)?;
        let pid = hello.strip_prefix(b"baton-session ")?;
        s.pid = String::from_utf8(pid.to_vec()).ok()?;
        s.pid.bytes().all(|b| b.is_ascii_digit()).then_some(s)
    }

    /// Run `argv` (the wrapped command) until it ends or `timeout`; at the timeout
    /// `kill` ends the command's session in the container.
    pub(crate) fn run(
        &mut self,
        argv: &[String],
        timeout: Duration,
        output_limit: u64,
        kill: &mut dyn FnMut(&str),
    ) -> Result<ExecOutput, Lost> {
        let marker = marker().ok_or(Lost::NotRun)?;
        let start = Instant::now();
        self.send("run", &marker, argv).map_err(|_| Lost::NotRun)?;
        let deadline = start + timeout;
        match self.line(deadline.max(Instant::now() + HELPER_TIMEOUT)) {
            Some(l) if l == format!("{marker} started").as_bytes() => {}
            _ => return Err(Lost::NotRun),
        }
        let mut capture = Capture::new(output_limit);
        let end = self.until_marker(&marker, deadline, &mut capture);
        let (status, duration) = match end {
            Ended::Marker => match self.line(Instant::now() + KILL_GRACE) {
                Some(rc) => (parse_rc(&rc), start.elapsed()),
                None => return Err(Lost::Ran(finish(capture, exited(137), start))),
            },
            Ended::Closed => return Err(Lost::Ran(finish(capture, exited(137), start))),
            Ended::Deadline => {
                let duration = start.elapsed();
                kill(&self.pid);
                let grace = Instant::now() + KILL_GRACE;
                match self.until_marker(&marker, grace, &mut capture) {
                    Ended::Marker if self.line(grace).is_some() => {}
                    _ => {
                        let out = ExecOutput {
                            status: ExitStatus::TimedOut,
                            output: capture.finish(),
                            duration,
                        };
                        return Err(Lost::Ran(out));
                    }
                }
                (ExitStatus::TimedOut, duration)
            }
        };
        Ok(ExecOutput {
            status,
            output: capture.finish(),
            duration,
        })
    }

    /// A `list` or `tar` request: its return code and bytes, or `None` (the session is
    /// unusable after it).
    pub(crate) fn request(&mut self, kind: &str, args: &[&[u8]]) -> Option<(i32, Vec<u8>)> {
        let marker = marker()?;
        self.send(kind, &marker, args).ok()?;
        let deadline = Instant::now() + HELPER_TIMEOUT;
        let head = self.line(deadline)?;
        let head = String::from_utf8(head).ok()?;
        let mut parts = head.split(' ');
        if parts.next() != Some(marker.as_str()) {
            return None;
        }
        let rc: i32 = parts.next()?.parse().ok()?;
        let size: usize = parts.next()?.parse().ok()?;
        while self.buf.len() < size {
            let chunk = self.rx.recv_timeout(remaining(deadline)).ok()?;
            self.buf.extend_from_slice(&chunk);
        }
        let rest = self.buf.split_off(size);
        Some((rc, std::mem::replace(&mut self.buf, rest)))
    }

    fn send<A: AsRef<[u8]>>(
        &mut self,
        kind: &str,
        marker: &str,
        args: &[A],
    ) -> std::io::Result<()> {
        let mut req = format!("{kind} {marker} {}\n", args.len()).into_bytes();
        for a in args {
            req.extend_from_slice(a.as_ref());
            req.push(0);
        }
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        stdin.write_all(&req)?;
        stdin.flush()
    }

    /// The next line (without its newline), or `None` at the end of the stream or the
    /// deadline.
    fn line(&mut self, deadline: Instant) -> Option<Vec<u8>> {
        loop {
            if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                let rest = self.buf.split_off(i + 1);
                let mut line = std::mem::replace(&mut self.buf, rest);
                line.pop();
                return Some(line);
            }
            let chunk = self.rx.recv_timeout(remaining(deadline)).ok()?;
            self.buf.extend_from_slice(&chunk);
        }
    }

    /// Pass everything before `marker` to `capture`; consume the marker.
    fn until_marker(&mut self, marker: &str, deadline: Instant, capture: &mut Capture) -> Ended {
        let m = marker.as_bytes();
        loop {
            if let Some(i) = find(&self.buf, m) {
                capture.push(&self.buf[..i]);
                self.buf.drain(..i + m.len());
                // the marker is followed by " RC\n"
                if self.buf.first() == Some(&b' ') {
                    self.buf.remove(0);
                }
                return Ended::Marker;
            }
            // keep what could be the start of a marker split across reads
            let keep = self.buf.len().min(m.len() - 1);
            let out = self.buf.len() - keep;
            capture.push(&self.buf[..out]);
            self.buf.drain(..out);
            match self.rx.recv_timeout(remaining(deadline)) {
                Ok(chunk) if self.buf.is_empty() => self.buf = chunk,
                Ok(chunk) => self.buf.extend_from_slice(&chunk),
                Err(mpsc::RecvTimeoutError::Timeout) => return Ended::Deadline,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    capture.push(&self.buf);
                    self.buf.clear();
                    return Ended::Closed;
                }
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // the server ends at the end of its input
        self.stdin.take();
        let deadline = Instant::now() + KILL_GRACE;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

enum Ended {
    Marker,
    Deadline,
    Closed,
}

/// Where `needle` starts in `hay`: the first byte found by a plain scan (which the
/// compiler vectorizes), then the rest compared; a gigabyte of output is scanned this way.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    let mut from = 0;
    while let Some(off) = hay[from..].iter().position(|b| *b == first) {
        let at = from + off;
        let end = at + needle.len();
        if end > hay.len() {
            return None;
        }
        if &hay[at + 1..end] == rest {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

fn exited(code: i32) -> ExitStatus {
    ExitStatus::Exited(code)
}

fn parse_rc(line: &[u8]) -> ExitStatus {
    std::str::from_utf8(line)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .map_or(exited(-1), exited)
}

fn finish(capture: Capture, status: ExitStatus, start: Instant) -> ExecOutput {
    ExecOutput {
        status,
        output: capture.finish(),
        duration: start.elapsed(),
    }
}

/// 128 random bits in hex.
fn marker() -> Option<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .ok()?;
    Some(format!("BATON{}", hex::encode(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_is_found_where_it_starts() {
        assert_eq!(find(b"xxBATON1yy", b"BATON1"), Some(2));
        assert_eq!(find(b"BBATBATON1", b"BATON1"), Some(4));
        assert_eq!(find(b"xxBATON", b"BATON1"), None);
        assert_eq!(find(b"", b"BATON1"), None);
    }
}
