//! A writer killed with SIGKILL loses at most the call in flight.
//!
//! The test binary runs itself as the child (`writer_child`, ignored unless asked for by
//! name): the child records one call each time the parent writes a line to its stdin
//! and writes `committed <turn>` to stdout once the store has acknowledged it. The
//! parent lets some calls through, asks for one more and kills the child at once.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use baton_store::{Reader, Store};
use baton_types::Phase;

use crate::{TestContext, call, conversation, init, meta, request_json, task};

const CHILD_ENV: &str = "BATON_STORE_TEST_CHILD";
const ACKED: u32 = 40;

#[test]
#[ignore = "the child process of a_killed_writer_loses_at_most_the_call_in_flight"]
fn writer_child() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = Store::open(std::path::Path::new(&path)).unwrap();
        store.init_experiment(meta()).await.unwrap();
        store.upsert_task(task("t1")).await.unwrap();
        let (e, _) = store.episode(init("t1", "single(lc)")).await.unwrap();
        let mut stdin = std::io::stdin().lock();
        let mut stdout = std::io::stdout();
        for turn in 1.. {
            let mut line = String::new();
            if stdin.read_line(&mut line).unwrap() == 0 {
                break;
            }
            let c = call(
                e.id,
                turn,
                Phase::Prefix,
                request_json(&conversation(turn as usize), 1),
            );
            store.record_call(c).await.unwrap();
            writeln!(stdout, "committed {turn}").unwrap();
            stdout.flush().unwrap();
        }
    });
}

#[test]
fn a_killed_writer_loses_at_most_the_call_in_flight() {
    let cx = TestContext::new();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "killed::writer_child",
            "--ignored",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, cx.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acked = 0;
    for _ in 0..ACKED {
        writeln!(stdin, "go").unwrap();
        stdin.flush().unwrap();
        // the harness's own output may share the line
        let turn: u32 = loop {
            let line = lines.next().expect("child alive").unwrap();
            if let Some((_, t)) = line.split_once("committed ") {
                break t.trim().parse().unwrap();
            }
        };
        acked = turn;
    }
    assert_eq!(acked, ACKED);
    writeln!(stdin, "go").unwrap();
    stdin.flush().unwrap();
    child.kill().unwrap(); // SIGKILL: no destructor, no checkpoint
    child.wait().unwrap();

    let reader = Reader::open(&cx.path()).expect("the store opens after the kill");
    let episode = reader.episodes().unwrap()[0].id;
    let calls = reader
        .calls(episode)
        .expect("every stored request is intact");
    let turns: Vec<u32> = calls.iter().map(|c| c.call.turn).collect();
    assert!(
        turns.len() as u32 == ACKED || turns.len() as u32 == ACKED + 1,
        "{} calls stored after {ACKED} acknowledged",
        turns.len()
    );
    assert_eq!(turns, (1..=turns.len() as u32).collect::<Vec<_>>());
    let integrity: String = rusqlite::Connection::open(cx.path())
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
}
