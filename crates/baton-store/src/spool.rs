//! Keeping paid replies the store cannot commit: the spool.
//!
//! When a write fails on the disk (full, failing, read-only), the writer retries the
//! commit, and if it still fails it appends the record (a call, an unusable attempt, an
//! agent call) as one JSON line to `<store>-spool`, the spool file beside the store,
//! and stops taking work ([`StoreError::WriteFailed`], then [`StoreError::Stopped`]).
//!
//! A full disk has no room for a new file, so the spool is reserved ahead: every open
//! fills it with [`SPOOL_BYTES`] zero bytes (written, so the file system has allocated
//! them) and records are written over the zeros, from the start, each followed by a
//! newline and synced. JSON text never holds a zero byte, so the records are the bytes
//! before the first zero. A record that does not fit in the reserve (less its last
//! [`SPOOL_TAIL`] bytes) is appended past it, which a full disk may refuse.
//!
//! Before a call is sent, the run claims room for its record ([`claim`], through
//! [`crate::Store::claim_spool`]): the reserve grows past [`SPOOL_BYTES`] when the
//! claims of the calls in flight would not fit in it, and a call whose room cannot be
//! had is not sent. So a reply that fits its claim always finds room.
//!
//! A record is written whole or not at all: bytes a failed write left are zeroed again
//! (and a file it extended is cut back), so a cut record never sits before the next.
//! A reply whose whole record finds no room is kept in its short form
//! ([`Kept::short`]): an unusable attempt with the reply's usage and cost but not its
//! text, written into the reserve's tail, which only such records use. So every
//! answered reply is kept, counted and priced, if not always with its text (a call kept
//! that way is made again by the resume: both replies are stored, and both counted).
//!
//! The next [`Store::open`](crate::Store::open) imports the records in one transaction,
//! recording the sha256 of each line in `spool_imports` so that an import interrupted
//! after its commit is never applied twice, and then zeroes the spool again.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::agent::{AgentCommand, NewAgentCall};
use crate::connect::{Cached, sqlite_err};
use crate::error::{Result, StoreError};
use crate::request::sha256_hex;
use crate::rows::{NewAttempt, NewCall};
use crate::writer::{Command, Db, NOW};

/// The bytes reserved for the spool: room for a few large replies.
pub(crate) const SPOOL_BYTES: u64 = 1 << 20;

/// The end of the reserve kept for records in their short form ([`Kept::short`]): a
/// few hundred of them, more than the calls one run has in flight.
pub(crate) const SPOOL_TAIL: u64 = 256 << 10;

/// The spool file of store `store`.
pub(crate) fn spool_path(store: &Path) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push("-spool");
    PathBuf::from(name)
}

/// A paid record the writer keeps when it cannot commit it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Kept {
    /// [`Command::RecordCall`].
    Call {
        /// The call.
        call: NewCall,
    },
    /// [`Command::RecordAttempt`].
    Attempt {
        /// The attempt.
        attempt: NewAttempt,
    },
    /// An agent episode's model call, after conversation node `context`.
    AgentCall {
        /// The call.
        call: NewAgentCall,
        /// The node it continues.
        context: i64,
    },
}

impl Kept {
    /// The paid record `cmd` carries, if it carries one.
    pub(crate) fn of(cmd: &Command) -> Option<Kept> {
        match cmd {
            Command::RecordCall(c, _) => Some(Kept::Call {
                call: (**c).clone(),
            }),
            Command::RecordAttempt(a, _) => Some(Kept::Attempt {
                attempt: (**a).clone(),
            }),
            Command::Agent(AgentCommand::Call(c, context, _)) => Some(Kept::AgentCall {
                call: (**c).clone(),
                context: *context,
            }),
            _ => None,
        }
    }

    /// The record in its short form: an unusable attempt of the same call with the
    /// reply's usage, cost and batch but not its text (nor the request or the raw
    /// body), saying why; `None` for a record that is already one.
    pub(crate) fn short(&self) -> Option<Kept> {
        let call = match self {
            Kept::Call { call }
            | Kept::AgentCall {
                call: NewAgentCall { call, .. },
                ..
            } => call,
            Kept::Attempt { attempt } if attempt.raw_response.is_some() => {
                return Some(Kept::Attempt {
                    attempt: NewAttempt {
                        raw_response: None,
                        reason: format!(
                            "{} (its body was not kept: the disk was full)",
                            attempt.reason
                        ),
                        ..attempt.clone()
                    },
                });
            }
            Kept::Attempt { .. } => return None,
        };
        Some(Kept::Attempt {
            attempt: NewAttempt {
                episode_id: call.episode_id,
                turn: call.turn,
                phase: call.phase,
                model: call.model.clone(),
                attempt: call.attempts,
                reason: "the reply was answered but the disk was full: its text could not be kept, so it is counted as an unusable attempt and the call is made again".into(),
                raw_response: None,
                usage: Some(call.usage),
                cost: match &call.unpriced {
                    Some(why) => Err(why.clone()),
                    None => Ok(call.cost),
                },
                latency_ms: call.latency_ms,
                batch_id: call.batch_id.clone(),
                batch_item: call.batch_item.clone(),
                cost_direct: call.cost_direct,
            },
        })
    }

    /// The call it belongs to, as errors name it: `episode 3 turn 2 (prefix)`.
    pub(crate) fn name(&self) -> String {
        let (episode, turn, phase) = match self {
            Kept::Call { call }
            | Kept::AgentCall {
                call: NewAgentCall { call, .. },
                ..
            } => (call.episode_id, call.turn, call.phase),
            Kept::Attempt { attempt } => (attempt.episode_id, attempt.turn, attempt.phase),
        };
        let what = if matches!(self, Kept::Attempt { .. }) {
            "an unusable attempt of "
        } else {
            ""
        };
        format!("{what}episode {episode} turn {turn} ({})", phase.as_str())
    }
}

/// The reserved spool of an open store.
#[derive(Debug)]
pub(crate) struct Spool {
    path: PathBuf,
    file: std::io::Result<File>,
    /// Where the next record goes.
    at: u64,
    /// The bytes claimed by calls in flight ([`SpoolClaim`]).
    claimed: u64,
    /// The file's length, as the spool wrote it (it is the only writer): claims compare
    /// with it without asking the file system at every call.
    len: u64,
}

/// The spool of an open store, shared by the writer (which writes records) and the
/// store's handles (which claim room for the calls they send).
pub(crate) type SharedSpool = std::sync::Arc<std::sync::Mutex<Option<Spool>>>;

/// Room in the spool held for one call in flight ([`crate::Store::claim_spool`]):
/// released when dropped.
#[derive(Debug)]
pub struct SpoolClaim {
    spool: SharedSpool,
    bytes: u64,
}

impl Drop for SpoolClaim {
    fn drop(&mut self) {
        if let Some(spool) = self.spool.lock().expect("spool lock").as_mut() {
            spool.claimed = spool.claimed.saturating_sub(self.bytes);
        }
    }
}

/// Claim `bytes` of room in `shared`'s reserve for a call about to be sent, growing
/// the reserve (zeros written and synced) when the claims in flight and the tail
/// ([`SPOOL_TAIL`]) would not fit in it. A store whose spool could not be opened claims
/// nothing (its records are appended if the disk allows, as before).
pub(crate) fn claim(shared: &SharedSpool, bytes: u64) -> std::io::Result<SpoolClaim> {
    let mut guard = shared.lock().expect("spool lock");
    if let Some(spool) = guard.as_mut()
        && spool.file.is_ok()
    {
        let len = spool.len;
        let need = spool.at + spool.claimed + bytes + SPOOL_TAIL;
        if need > len {
            // grown to a whole number of reserves, so that the claims of a run's calls
            // in flight, which rise a little with each turn, sync the disk a few times
            // a run rather than at every call (bench harness, 4,260 calls: 1,431 syncs,
            // now 19); a disk without room for the round figure may still have room for
            // the need
            let round = need.div_ceil(SPOOL_BYTES) * SPOOL_BYTES;
            if spool
                .write_undone(&vec![0u8; (round - len) as usize], len)
                .is_err()
            {
                spool.write_undone(&vec![0u8; (need - len) as usize], len)?;
            }
        }
        spool.claimed += bytes;
    }
    Ok(SpoolClaim {
        spool: shared.clone(),
        bytes: if guard.is_some() { bytes } else { 0 },
    })
}

impl Spool {
    /// Open the spool of store `store`, reserving [`SPOOL_BYTES`] when it has fewer.
    /// Failing to reserve is not fatal (the disk may be nearly full already): it is
    /// logged, and a record is then appended if the disk allows.
    pub(crate) fn open(store: &Path) -> Spool {
        let path = spool_path(store);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .and_then(|f| {
                let at = used(&f)?;
                reserve(&f)?;
                let len = f.metadata()?.len();
                Ok((f, at, len))
            });
        match file {
            Ok((f, at, len)) => Spool {
                path,
                file: Ok(f),
                at,
                claimed: 0,
                len,
            },
            Err(e) => {
                tracing::warn!(spool = %path.display(), "cannot reserve the store's spool ({e}); a reply the store cannot write may then be lost");
                let file = OpenOptions::new().read(true).write(true).open(&path);
                let at = file.as_ref().map(used).ok().and_then(|r| r.ok());
                let len = file.as_ref().ok().and_then(|f| f.metadata().ok());
                Spool {
                    path,
                    file,
                    at: at.unwrap_or(0),
                    claimed: 0,
                    len: len.map_or(0, |m| m.len()),
                }
            }
        }
    }

    /// The spool file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Write `kept` as one line at the end of the records and sync it, whole or not at
    /// all; when the whole record finds no room, write its short form
    /// ([`Kept::short`]) instead. Returns whether the record was kept whole.
    pub(crate) fn keep(&mut self, kept: &Kept) -> std::io::Result<bool> {
        match kept.short() {
            None => self.write_line(kept, true).map(|()| true),
            Some(short) => match self.write_line(kept, false) {
                Ok(()) => Ok(true),
                Err(e) => {
                    tracing::warn!(spool = %self.path.display(), "{}: no room for the whole record ({e}); its short form is kept", kept.name());
                    self.write_line(&short, true).map(|()| false)
                }
            },
        }
    }

    /// Write one record; `tail`: it may use the reserve's tail ([`SPOOL_TAIL`]). A
    /// record that may not, and would reach into the tail, first grows the reserve
    /// (zeros written and synced past its end), which a full disk may refuse. A failed
    /// write is undone (see the module docs).
    fn write_line(&mut self, kept: &Kept, tail: bool) -> std::io::Result<()> {
        let len = self
            .file
            .as_ref()
            .map_err(|e| std::io::Error::new(e.kind(), e.to_string()))?
            .metadata()?
            .len();
        self.len = len;
        let mut line = serde_json::to_vec(kept).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let end = self.at + line.len() as u64;
        if !tail && end + SPOOL_TAIL > len {
            let grow = end + SPOOL_TAIL - len;
            self.write_undone(&vec![0u8; grow as usize], len)?;
        }
        self.write_undone(&line, self.at)?;
        self.at = end;
        Ok(())
    }

    /// Write `line` at `at` and sync; on failure, zero what was written and cut back a
    /// file it extended.
    fn write_undone(&mut self, line: &[u8], at: u64) -> std::io::Result<()> {
        let file = self
            .file
            .as_ref()
            .map_err(|e| std::io::Error::new(e.kind(), e.to_string()))?;
        let len = file.metadata()?.len();
        let written = write_at(file, line, at).and_then(|()| file.sync_data());
        if let Err(e) = written {
            if at < len {
                let n = (len - at).min(line.len() as u64) as usize;
                let _ = write_at(file, &vec![0u8; n], at);
            }
            let _ = file.set_len(len);
            let _ = file.sync_data();
            self.len = len;
            return Err(e);
        }
        self.len = len.max(at + line.len() as u64);
        Ok(())
    }
}

/// Write zeros up to [`SPOOL_BYTES`] (zeros written, not a hole: the blocks must be
/// the file system's before the disk fills), and sync them.
fn reserve(f: &File) -> std::io::Result<()> {
    let len = f.metadata()?.len();
    if len >= SPOOL_BYTES {
        return Ok(());
    }
    let zeros = vec![0u8; (SPOOL_BYTES - len) as usize];
    write_at(f, &zeros, len)?;
    f.sync_all()
}

/// Write `bytes` at offset `at` of `f`.
fn write_at(mut f: &File, bytes: &[u8], at: u64) -> std::io::Result<()> {
    f.seek(SeekFrom::Start(at))?;
    f.write_all(bytes)
}

/// The bytes of records in `f`: up to its first zero byte.
fn used(f: &File) -> std::io::Result<u64> {
    let mut bytes = Vec::new();
    let mut r = f;
    r.seek(SeekFrom::Start(0))?;
    r.read_to_end(&mut bytes)?;
    Ok(bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len()) as u64)
}

/// Whether store `store` has spooled records not yet imported.
pub(crate) fn pending(store: &Path) -> bool {
    let mut first = [0u8; 1];
    File::open(spool_path(store))
        .and_then(|mut f| f.read(&mut first))
        .is_ok_and(|n| n == 1 && first[0] != 0)
}

impl Db {
    /// Import the spool's records, in one transaction, then zero the spool; returns how
    /// many were imported. A spool that cannot be read or imported is an error (the run
    /// must not start without the replies it holds); a last line without its newline was
    /// cut short as it was written (its reply was reported lost) and is skipped.
    pub(crate) fn import_spool(&mut self) -> Result<usize> {
        let spool = spool_path(&self.path);
        let io = |e: std::io::Error| StoreError::Decode {
            path: spool.clone(),
            what: "the spool".into(),
            message: e.to_string(),
        };
        let mut bytes = Vec::new();
        match File::open(&spool) {
            Ok(mut f) => f.read_to_end(&mut bytes).map_err(io)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(io(e)),
        };
        let used = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
        if used == 0 {
            return Ok(0);
        }
        let text = &bytes[..used];
        let complete = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        if complete < used {
            tracing::warn!(spool = %spool.display(), "the spool's last record was cut short as it was written; it is skipped");
        }
        let store = self.path.clone();
        let err = sqlite_err(&store);
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(&err)?;
        let imported = self.import_lines(&spool, &text[..complete]);
        let imported = match imported {
            Ok(n) => self.conn.execute_batch("COMMIT").map(|()| n).map_err(&err),
            Err(e) => Err(e),
        };
        let n = match imported {
            Ok(n) => n,
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                return Err(e);
            }
        };
        // committed: the records are the store's now; zero them where they are
        let f = OpenOptions::new().write(true).open(&spool).map_err(io)?;
        write_at(&f, &vec![0u8; used], 0).map_err(io)?;
        f.sync_data().map_err(io)?;
        tracing::info!(spool = %spool.display(), records = n, "imported the replies the store had spooled");
        Ok(n)
    }

    fn import_lines(&mut self, spool: &Path, text: &[u8]) -> Result<usize> {
        let store = self.path.clone();
        let err = sqlite_err(&store);
        let mut n = 0;
        for (i, line) in text.split(|b| *b == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            let decode = |message: String| StoreError::Decode {
                path: spool.to_path_buf(),
                what: format!("spool line {}", i + 1),
                message,
            };
            let sha = sha256_hex(&String::from_utf8_lossy(line));
            let done: Option<i64> = self
                .conn
                .row(
                    "SELECT 1 FROM spool_imports WHERE sha256 = ?1",
                    [&sha],
                    |r| r.get(0),
                )
                .optional()
                .map_err(&err)?;
            if done.is_some() {
                continue;
            }
            let kept: Kept = serde_json::from_slice(line).map_err(|e| decode(e.to_string()))?;
            match &kept {
                Kept::Call { call } => self.record_call(call).map(drop),
                Kept::Attempt { attempt } => self.record_attempt(attempt).map(drop),
                Kept::AgentCall { call, context } => self.agent_call(call, *context).map(drop),
            }?;
            self.conn
                .exec(
                    &format!("INSERT INTO spool_imports (sha256, imported_at) VALUES (?1, {NOW})"),
                    params![sha],
                )
                .map_err(&err)?;
            n += 1;
        }
        Ok(n)
    }
}
