//! Per-command overhead of each backend that works here: `cargo bench -p baton-env`.
//! Prints the median, p90 and mean wall time of `true`, of a Python start-up, and of a
//! snapshot of a small tree.

#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use baton_env::{BackendKind, DirBlobStore, EnvConfig, Exec, Setup, start};

fn stats(mut v: Vec<Duration>) -> String {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mean = v.iter().map(|d| ms(*d)).sum::<f64>() / v.len() as f64;
    format!(
        "median {:.2} ms  p90 {:.2} ms  mean {:.2} ms  (n={})",
        ms(v[v.len() / 2]),
        ms(v[v.len() * 9 / 10]),
        mean,
        v.len()
    )
}

fn main() {
    let n: usize = std::env::var("BATON_BENCH_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50);
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    for i in 0..50 {
        std::fs::write(
            tree.join(format!("m{i}.py")),
            format!("X = {i}\n").repeat(40),
        )
        .unwrap();
    }
    let blobs = DirBlobStore::new(dir.path().join("blobs")).unwrap();
    for backend in [BackendKind::Bwrap, BackendKind::Local] {
        let config = EnvConfig::for_backend(backend);
        let mut env = match start(&config, &Setup::tree(&tree)) {
            Ok(e) => e,
            Err(e) => {
                println!("{backend}: skipped ({e})");
                continue;
            }
        };
        let mut time = |cmd: &str| -> Vec<Duration> {
            (0..n)
                .map(|_| {
                    env.exec(&Exec::new(cmd))
                        .map(|o| o.duration)
                        .unwrap_or_default()
                })
                .collect()
        };
        println!("{backend:<6} true          {}", stats(time("true")));
        println!("{backend:<6} python3 -c 1  {}", stats(time("python3 -c 1")));
        let snaps: Vec<Duration> = (0..n)
            .map(|i| {
                env.write_file("edit.py", format!("Y = {i}\n").as_bytes(), false)
                    .unwrap();
                let t = Instant::now();
                env.snapshot(&blobs).unwrap();
                t.elapsed()
            })
            .collect();
        println!(
            "{backend:<6} snapshot (51 files, one changed) {}",
            stats(snaps)
        );
        let _ = env.close();
    }
}
