//! A dataset's environment settings under bubblewrap: variables, `BASH_ENV` and a
//! startup command (activation), and network on or off.

use std::collections::BTreeMap;

use baton_env::{BackendKind, EnvConfig, Exec, Setup, start};

use crate::{bwrap_works, run_once};

fn run(config: &EnvConfig, tree: &std::path::Path, command: &str) -> String {
    run_once(config, &Setup::tree(tree), command)
}

#[test]
fn issue_25_dataset_variables_bash_env_and_startup_command_reach_every_command() {
    if !bwrap_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("activate.sh"), "export ACTIVE=testbed\n").unwrap();
    let mut config = EnvConfig::for_backend(BackendKind::Bwrap);
    config.env = BTreeMap::from([
        ("PAGER".to_string(), "cat".to_string()),
        ("BASH_ENV".to_string(), "/testbed/activate.sh".to_string()),
    ]);
    assert_eq!(
        run(&config, dir.path(), "echo $PAGER $ACTIVE"),
        "cat testbed\n"
    );
    // a setup's own variable wins over the dataset's
    let mut setup = Setup::tree(dir.path());
    setup.env.insert("PAGER".into(), "less".into());
    let mut env = start(&config, &setup).unwrap();
    let out = env.exec(&Exec::new("echo $PAGER")).unwrap();
    assert_eq!(out.output.text(), "less\n");
    env.close().unwrap();

    let mut config = EnvConfig::for_backend(BackendKind::Bwrap);
    config.env_startup_command = Some("source /testbed/activate.sh; cd /tmp".into());
    assert_eq!(
        run(&config, dir.path(), "echo $ACTIVE $PWD"),
        "testbed /tmp\n"
    );
    // the setting is left out of a default config's serialized form (stored identities)
    let json = serde_json::to_string(&EnvConfig::default()).unwrap();
    for key in ["\"env\"", "env_startup_command", "network"] {
        assert!(!json.contains(key), "{json}");
    }
}

#[test]
fn issue_25_network_is_off_by_default_and_on_when_configured() {
    if !bwrap_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let interfaces = |config: &EnvConfig| -> Vec<String> {
        run(config, dir.path(), "tail -n +3 /proc/net/dev")
            .lines()
            .filter_map(|l| l.split(':').next().map(|n| n.trim().to_string()))
            .collect()
    };
    let off = EnvConfig::for_backend(BackendKind::Bwrap);
    assert!(!off.network);
    assert_eq!(interfaces(&off), vec!["lo".to_string()]);
    let host: Vec<String> = std::fs::read_to_string("/proc/net/dev")
        .unwrap()
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next().map(|n| n.trim().to_string()))
        .collect();
    let on = EnvConfig {
        network: true,
        ..EnvConfig::for_backend(BackendKind::Bwrap)
    };
    let mut seen = interfaces(&on);
    let mut want = host;
    seen.sort();
    want.sort();
    assert_eq!(seen, want, "the host's interfaces are shared");
}
