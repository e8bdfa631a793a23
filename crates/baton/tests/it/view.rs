//! `baton view`: the transcript viewer of a real run's store, checked against the store
//! row by row, then clicked through in a real browser (headless Chromium driven over
//! WebDriver by chromedriver).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::support::{free_port, sim_pair};
use crate::{baton, stderr};

const EXPERIMENT: &str = concat!(
    r#"
name = "view"
dataset = "sample"
families = ["math", "actions"]
limit = 2
replicates = 1
seed = 3
interfaces = ["raw", "compact_pre"]
[chat]
switch_points = ["early"]
directions = ["escalation"]
"#,
    sim_pair!()
);

/// A finished run of [`EXPERIMENT`] and its viewer.
fn run_and_view(dir: &Path) -> PathBuf {
    let exp = dir.join("exp.toml");
    std::fs::write(&exp, EXPERIMENT).unwrap();
    let out = dir.join("out");
    let o = baton(
        dir,
        &["run", "exp.toml", "--out", out.to_str().unwrap(), "--quiet"],
    );
    assert!(o.status.success(), "run: {}", stderr(&o));
    let o = baton(dir, &["view", out.to_str().unwrap()]);
    assert!(o.status.success(), "view: {}", stderr(&o));
    out
}

/// The value a `data/<name>.js` file hands to the page.
fn data(view: &Path, name: &str) -> Value {
    let text = std::fs::read_to_string(view.join("data").join(format!("{name}.js"))).unwrap();
    let prefix = format!("BATON.put({}, ", serde_json::to_string(name).unwrap());
    let json = text
        .strip_prefix(&prefix)
        .and_then(|t| t.strip_suffix(");\n"))
        .expect("BATON.put(name, value);");
    serde_json::from_str(json).expect("JSON")
}

/// See: issue 35, "What to build" 1: every episode of the store is in the viewer, each
/// call of its transcript is a stored call (a forked prefix read from its anchor), and
/// the switch, answer and verdict are the store's.
#[test]
fn issue_35_the_viewer_shows_every_episode_as_stored() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_and_view(dir.path());
    let view = out.join("view");
    let db = Connection::open(out.join("results.sqlite")).unwrap();
    let store = baton_store::Reader::open(&out.join("results.sqlite")).unwrap();

    let meta = data(&view, "meta");
    let stored: i64 = db
        .query_row("SELECT count(*) FROM episodes", [], |r| r.get(0))
        .unwrap();
    assert_eq!(meta["episodes"], json!(stored));
    let rows = data(&view, "list-0");
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len() as i64, stored);

    let mut chunks: BTreeMap<u64, Value> = BTreeMap::new();
    let mut handoffs = 0;
    for row in rows {
        let id = row["id"].as_i64().unwrap();
        let chunk = row["chunk"].as_u64().unwrap();
        let episodes = chunks
            .entry(chunk)
            .or_insert_with(|| data(&view, &format!("ep-{chunk}")));
        let e = &episodes["episodes"][id.to_string()];
        let system = &episodes["systems"][e["system"].as_u64().unwrap() as usize];
        let first_call = store.calls(forked_or(&db, id)).unwrap().remove(0);
        let first_request: Value = serde_json::from_str(&first_call.call.request_json).unwrap();
        assert_eq!(
            system, &first_request["messages"][0]["content"],
            "episode {id}: the system prompt"
        );
        let (cell, score, extracted, k, forked): (
            String,
            Option<f64>,
            Option<String>,
            Option<u32>,
            Option<i64>,
        ) = db
            .query_row(
                "SELECT cell_key, score, extracted, k, forked_from FROM episodes WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .unwrap();
        assert_eq!(e["cell"], json!(cell), "episode {id}");
        assert_eq!(row["cell"], json!(cell), "episode {id}");
        assert_eq!(e["final"]["score"], json!(score), "episode {id}");
        assert_eq!(e["final"]["extracted"], json!(extracted), "episode {id}");

        // Every call shown is a stored call: its own, then the anchor's first K turns.
        let own: i64 = db
            .query_row(
                "SELECT count(*) FROM calls WHERE episode_id = ?1",
                [id],
                |r| r.get(0),
            )
            .unwrap();
        let prefix: i64 = match (forked, k) {
            (Some(parent), Some(k)) => db
                .query_row(
                    "SELECT count(*) FROM calls WHERE episode_id = ?1 AND phase = 'prefix' AND turn <= ?2",
                    [parent, k as i64],
                    |r| r.get(0),
                )
                .unwrap(),
            _ => 0,
        };
        let events = e["events"].as_array().unwrap();
        let calls: Vec<&Value> = events.iter().filter(|v| v["kind"] == "call").collect();
        assert_eq!(
            calls.len() as i64,
            own + prefix,
            "episode {id}: calls shown"
        );
        let own_replies: Vec<String> = db
            .prepare("SELECT response_text FROM calls WHERE episode_id = ?1 ORDER BY id")
            .unwrap()
            .query_map([id], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let shown: Vec<&str> = calls
            .iter()
            .filter(|c| c["forked"] == false)
            .map(|c| c["reply"].as_str().unwrap())
            .collect();
        assert_eq!(shown, own_replies, "episode {id}: replies");

        let switches: Vec<&Value> = events.iter().filter(|v| v["kind"] == "switch").collect();
        if cell.starts_with("handoff") {
            handoffs += 1;
            assert_eq!(switches.len(), 1, "episode {id}: one switch");
            assert_eq!(switches[0]["from"], "lc");
            assert_eq!(switches[0]["to"], "hc");
            // the switch comes after the sender's turns and before the receiver's
            let at = events.iter().position(|v| v["kind"] == "switch").unwrap();
            assert!(
                events[..at].iter().all(|c| c["model"] == "lc"),
                "episode {id}"
            );
            assert!(
                events[at + 1..]
                    .iter()
                    .filter(|c| c["phase"] == "suffix")
                    .all(|c| c["model"] == "hc"),
                "episode {id}"
            );
        } else {
            assert!(switches.is_empty(), "episode {id}");
        }
    }
    assert!(handoffs >= 4, "the run has handoff episodes ({handoffs})");
}

/// The episode whose calls start `id`'s conversation: its anchor when forked.
fn forked_or(db: &Connection, id: i64) -> i64 {
    db.query_row(
        "SELECT coalesce(forked_from, id) FROM episodes WHERE id = ?1",
        [id],
        |r| r.get(0),
    )
    .unwrap()
}

struct Driver {
    child: Child,
    base: String,
    session: String,
    http: reqwest::blocking::Client,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self
            .http
            .delete(format!("{}/session/{}", self.base, self.session))
            .send();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    fn start(chromium: &Path, chromedriver: &Path, profile: &Path) -> Driver {
        let port = free_port();
        let child = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let started = Instant::now();
        while http.get(format!("{base}/status")).send().is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "chromedriver answers"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                         "--no-first-run", "--disable-background-networking",
                         "--disable-component-update", "--disable-sync",
                         "--allow-file-access-from-files",
                         format!("--user-data-dir={}", profile.display()),
                         "--window-size=1280,2000"]
            }
        }}});
        let reply: Value = http
            .post(format!("{base}/session"))
            .json(&caps)
            .send()
            .and_then(|r| r.json())
            .expect("a session");
        let session = reply["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("a session: {reply}"))
            .to_owned();
        Driver {
            child,
            base,
            session,
            http,
        }
    }

    fn call(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let mut request = self.http.request(method.clone(), url);
        if method != reqwest::Method::GET {
            request = request.json(&body);
        }
        let reply: Value = request
            .send()
            .and_then(|r| r.json())
            .expect("a WebDriver reply");
        reply["value"].clone()
    }

    fn go(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", json!({"url": url}));
    }

    fn script(&self, script: &str) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
    }

    /// Wait until `script` returns something truthy, and return it.
    fn wait_for(&self, script: &str) -> Value {
        let started = Instant::now();
        loop {
            let v = self.script(script);
            if !(v.is_null() || v == json!(false) || v == json!("")) {
                return v;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "waiting for: {script}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn click(&self, css: &str) {
        let found = self.call(
            reqwest::Method::POST,
            "/element",
            json!({"using": "css selector", "value": css}),
        );
        let id = found
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("an element {css}: {found}"))
            .to_owned();
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/click"),
            json!({}),
        );
    }

    fn screenshot(&self, to: &Path) {
        use base64::Engine;
        let png = self.call(reqwest::Method::GET, "/screenshot", Value::Null);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(
                png.as_str()
                    .unwrap_or_else(|| panic!("a screenshot: {png}")),
            )
            .unwrap();
        std::fs::write(to, bytes).unwrap();
    }
}

/// `chromium` and `chromedriver` on this machine, or `None` (a skip outside CI, a
/// failure under `BATON_REQUIRE_CONFORMANCE=1`, where `.ci/run` installs both).
fn browser() -> Option<(PathBuf, PathBuf)> {
    let find = |names: &[&str]| names.iter().map(PathBuf::from).find(|p| p.is_file());
    let chromium = find(&["/usr/bin/chromium", "/usr/bin/chromium-browser"]);
    let driver = find(&["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]);
    match (chromium, driver) {
        (Some(c), Some(d)) => Some((c, d)),
        _ => {
            baton_fixture::skip(
                "chromium and chromedriver (apt-get install chromium chromium-driver)",
            );
            None
        }
    }
}

/// See: issue 35, "Done when": in a real browser, from the list filtered to a handoff
/// cell, a click on an episode opens its transcript, which shows the switch marker with
/// both models and the store's verdict.
#[test]
fn issue_35_a_browser_clicks_from_a_cell_to_a_handoff_transcript() {
    let Some((chromium, chromedriver)) = browser() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = run_and_view(dir.path());
    let db = Connection::open(out.join("results.sqlite")).unwrap();
    let (id, cell, is_correct, no_answer): (i64, String, Option<bool>, bool) = db
        .query_row(
            "SELECT id, cell_key, is_correct, no_answer FROM episodes
             WHERE cell_key LIKE 'handoff%' AND status = 'scored' ORDER BY id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    let expected = match (no_answer, is_correct) {
        (true, _) => "no answer",
        (false, Some(true)) => "correct",
        (false, Some(false)) => "wrong",
        (false, None) => "scored",
    };

    // the HTML report, written beside the viewer, links its rows to it
    let report = out.join("report.html");
    let o = baton(
        dir.path(),
        &[
            "report",
            out.to_str().unwrap(),
            "--format",
            "html",
            "--bootstrap",
            "0",
            "--out",
            report.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "report: {}", stderr(&o));

    let profile = dir.path().join("profile");
    let driver = Driver::start(&chromium, &chromedriver, &profile);
    let cell_query = serde_json::to_string(&cell).unwrap();
    driver.go(&format!("file://{}", report.display()));
    // a handoff row of the family of the episode, in the report's table
    let family: String = db
        .query_row(
            "SELECT t.family FROM episodes e JOIN tasks t USING (task_id) WHERE e.id = ?1",
            [id],
            |r| r.get(0),
        )
        .unwrap();
    let (_, interface) = cell.trim_end_matches(')').rsplit_once(", ").unwrap();
    let link = driver.wait_for(&format!(
        "return [...document.querySelectorAll('td a')].map(a => a.getAttribute('href'))\
         .find(h => h.includes('group={family}') && h.includes('{}') && h.includes('handoff'))",
        interface
    ));
    let link = link.as_str().unwrap().to_owned();
    assert!(link.starts_with("view/index.html#cell="), "{link}");
    driver.click(&format!("td a[href='{link}']"));
    driver.wait_for("return document.body.dataset.ready === '1'");
    // the list shows only that cell's episodes
    let cells = driver.wait_for(
        "const r = [...document.querySelectorAll('#episodes tbody tr td:nth-child(4)')]; return r.length ? r.map(t => t.textContent) : null",
    );
    let cells = cells.as_array().unwrap();
    assert!(!cells.is_empty());
    assert!(
        cells.iter().all(|c| c == &json!(cell)),
        "filtered to {cell_query}: {cells:?}"
    );
    driver.click(&format!(
        "#episodes tbody tr[data-id='{id}'] td:nth-child(2)"
    ));
    let switch =
        driver.wait_for("const s = document.querySelector('.switch'); return s && s.textContent");
    let switch = switch.as_str().unwrap();
    assert!(switch.contains("lc → hc"), "{switch}");
    let verdict =
        driver.wait_for("const v = document.querySelector('#verdict'); return v && v.textContent");
    assert!(
        verdict
            .as_str()
            .unwrap()
            .starts_with(&format!("verdict: {expected}")),
        "{verdict} (store: {expected})"
    );
    let title = driver.script("return document.querySelector('.episode h2').textContent");
    assert_eq!(title, json!(format!("episode {id} · {cell}")));
    // the replies of both models are on the page
    let models = driver.script(
        "return [...document.querySelectorAll('.event.call .model')].map(m => m.dataset.model)",
    );
    let models = models.as_array().unwrap();
    assert!(
        models.contains(&json!("lc")) && models.contains(&json!("hc")),
        "{models:?}"
    );
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("baton-view-episode.png");
    driver.screenshot(&shot);
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 10_000,
        "a real screenshot at {}",
        shot.display()
    );
}

const AGENT_EXPERIMENT: &str = r#"
kind = "agent"
name = "agent-view"
dataset = "agent-sample"
limit = 4
seed = 5
concurrency = 2
interfaces = ["raw", "compact_pre"]
[agent]
step_limit = 30
[models.lc]
model = "sim/lc"
[models.lc.sim]
skill = 0.45
[models.hc]
model = "sim/hc"
[[pairs]]
low = "lc"
high = "hc"
[handoff]
percentiles = [10]
"#;

/// See: issue 35, "What to build" 1: an agent episode shows each command with the
/// observation the agent saw, in order, its forked prefix included, and the switch where
/// it happened (or why it did not).
#[test]
fn issue_35_the_viewer_shows_an_agents_commands_and_switch() {
    if !crate::env::sandbox_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("exp.toml"), AGENT_EXPERIMENT).unwrap();
    let o = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert!(o.status.success(), "run: {}", stderr(&o));
    let o = baton(dir.path(), &["view", "out"]);
    assert!(o.status.success(), "view: {}", stderr(&o));
    let out = dir.path().join("out");
    let view = out.join("view");
    let db = Connection::open(out.join("results.sqlite")).unwrap();
    let store = baton_store::Reader::open(&out.join("results.sqlite")).unwrap();
    let rows = data(&view, "list-0");
    let (mut fired, mut not_fired) = (0, 0);
    for row in rows.as_array().unwrap() {
        let id = row["id"].as_i64().unwrap();
        let chunk = data(&view, &format!("ep-{}", row["chunk"]));
        let e = &chunk["episodes"][id.to_string()];
        let events = e["events"].as_array().unwrap();
        // the commands shown are the stored ones, the prefix's from its anchor
        let (forked, k): (Option<i64>, Option<i64>) = db
            .query_row(
                "SELECT forked_from, k FROM episodes WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        let mut expected: Vec<(String, Option<String>)> = Vec::new();
        let mut steps_of = |episode: i64, below: Option<i64>| {
            for s in store.agent_progress(episode).unwrap().steps {
                if below.is_none_or(|k| i64::from(s.step.call_index) < k) {
                    let seen = s.step.observation.map(|o| {
                        let v: Value = serde_json::from_str(&o).unwrap();
                        v["content"].as_str().unwrap().to_owned()
                    });
                    expected.push((s.step.command, seen));
                }
            }
        };
        if let (Some(parent), Some(k)) = (forked, k) {
            steps_of(parent, Some(k));
        }
        steps_of(id, None);
        let shown: Vec<(String, Option<String>)> = events
            .iter()
            .filter(|v| v["kind"] == "step")
            .map(|v| {
                (
                    v["command"].as_str().unwrap().to_owned(),
                    v["observation"].as_str().map(str::to_owned),
                )
            })
            .collect();
        assert_eq!(shown, expected, "episode {id}: commands and observations");
        assert!(!shown.is_empty(), "episode {id}");

        let switch: Option<bool> = db
            .query_row(
                "SELECT fired FROM agent_switches WHERE episode_id = ?1",
                [id],
                |r| r.get(0),
            )
            .ok();
        let kinds: Vec<&str> = events.iter().map(|v| v["kind"].as_str().unwrap()).collect();
        match switch {
            Some(true) => {
                fired += 1;
                assert_eq!(kinds.iter().filter(|k| **k == "switch").count(), 1);
                let at = kinds.iter().position(|k| *k == "switch").unwrap();
                let receiver = events[at]["to"].as_str().unwrap();
                assert!(
                    events[at + 1..]
                        .iter()
                        .filter(|v| v["kind"] == "call" && v["phase"] == "suffix")
                        .all(|v| v["model"] == receiver),
                    "episode {id}: after the switch the receiver answers"
                );
            }
            Some(false) => {
                not_fired += 1;
                assert_eq!(kinds.last(), Some(&"no_switch"), "episode {id}");
            }
            None => assert!(!kinds.contains(&"switch"), "episode {id}"),
        }
    }
    assert!(fired > 0, "some switches fired ({fired}, {not_fired} not)");
}
