//! The local backend shares the tree and process machinery, without isolation.

use baton_env::{BackendKind, EnvConfig};

use crate::Harness;
use crate::boundary::*;

fn local() -> Harness {
    Harness {
        config: EnvConfig::for_backend(BackendKind::Local),
        shim: None,
        image: None,
        name: "local",
        root_writable: true,
    }
}

#[test]
fn local_files_persist_but_directory_and_variables_do_not() {
    let h = local();
    let tree = crate::sample_tree();
    let mut env = h.start(tree.path());
    let out = crate::run(
        &mut env,
        "cd pkg && export BATON_X=1 && echo kept > made.txt",
    );
    assert!(out.status.success());
    let out = crate::run(
        &mut env,
        "echo ${BATON_X:-unset}; cat pkg/made.txt; echo $PYTHONDONTWRITEBYTECODE",
    );
    assert_eq!(out.output.text(), "unset\nkept\n1\n");
}

#[test]
fn local_timeout_kills_the_process_group() {
    a_timeout_kills_grandchildren_case(&local(), false);
}

#[test]
fn local_snapshots_round_trip() {
    snapshots_round_trip_with_a_nested_git_repository_case(&local());
}

#[test]
fn local_output_is_bounded() {
    a_gigabyte_of_output_is_cut_to_the_limit_case(&local());
}
