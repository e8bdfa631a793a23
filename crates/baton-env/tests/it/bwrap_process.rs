//! What the bubblewrap sandbox's own first process shows, and the resolver a networked
//! sandbox gets (issue 34).

use std::collections::BTreeMap;

use baton_env::{BackendKind, EnvConfig, Setup};

use crate::{bwrap_works, run_once, sample_tree};

/// `/proc/1/environ` of the sandbox is bwrap's own init: it holds exactly the configured
/// variables (no host `PATH`, nothing of baton's own environment).
// See: issue 34
#[test]
fn issue_34_sandbox_pid_1_sees_the_configured_environment_only() {
    if !bwrap_works() {
        return;
    }
    let tree = sample_tree();
    let mut setup = Setup::tree(tree.path());
    setup
        .env
        .insert("TASK_MARK".into(), "from-the-setup".into());
    let config = EnvConfig::for_backend(BackendKind::Bwrap);
    let text = run_once(&config, &setup, "tr '\\0' '\\n' < /proc/1/environ");
    let seen: BTreeMap<&str, &str> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split_once('=').unwrap())
        .collect();
    let mut expected = baton_env::base_env(BackendKind::Bwrap);
    expected.insert("TASK_MARK".into(), "from-the-setup".into());
    let expected: BTreeMap<&str, &str> = expected
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(seen, expected, "{text}");
    // The host's own values are not there (this process's PATH, say).
    for (k, v) in std::env::vars() {
        if expected.get(k.as_str()) != Some(&v.as_str()) {
            assert!(!text.contains(&format!("{k}={v}\n")), "host {k} in {text}");
        }
    }
}

/// `network = true` binds the host's resolver configuration and looks names up through
/// it; without the network there is no resolver configuration at all.
// See: issue 34
#[test]
fn issue_34_a_networked_sandbox_has_the_hosts_resolver() {
    if !bwrap_works() {
        return;
    }
    let tree = sample_tree();
    let setup = Setup::tree(tree.path());
    let mut config = EnvConfig::for_backend(BackendKind::Bwrap);
    let show =
        "cat /etc/resolv.conf 2>/dev/null || echo NO-RESOLV; grep '^hosts:' /etc/nsswitch.conf";
    assert_eq!(run_once(&config, &setup, show), "NO-RESOLV\nhosts: files\n");
    config.network = true;
    let text = run_once(&config, &setup, show);
    let host = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
    if host.is_empty() {
        assert_eq!(text, "NO-RESOLV\nhosts: files dns\n");
    } else {
        assert_eq!(text, format!("{host}hosts: files dns\n"));
    }
}
