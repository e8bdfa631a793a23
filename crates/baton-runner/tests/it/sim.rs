//! The simulated models on the sample set: their final answers follow the chances their
//! rules document. (It lives here, where the dataset and the simulated models meet, so
//! that `baton-models` needs no `baton-data`.)

use baton_models::sim::{DRAFT_LEAD, DRAFT_TAIL};
use baton_models::{Request, SimProvider, SimSettings, reference_response, wrong_response};
use baton_types::Message;

/// The chance of a right final answer follows the documented rule: about
/// `skill · (1 − anchoring)` after a wrong draft and `skill + carry · (1 − skill)`
/// after a right one, whatever the family.
#[test]
fn final_answers_follow_the_documented_chances() {
    let tasks = baton_data::sample_dataset().tasks;
    let s = SimSettings::preset("lc");
    let sim = SimProvider::new(tasks.clone(), [("lc".to_string(), s)].into()).unwrap();
    for task in tasks.iter().filter(|t| t.shards.len() >= 2) {
        let reference = reference_response(task).unwrap();
        let wrong = wrong_response(task, 1).unwrap();
        let n = task.shards.len();
        let mut right = [0u32; 2];
        let trials = 400;
        for seed in 0..trials {
            for (i, prev) in [&wrong, &reference].into_iter().enumerate() {
                let mut messages = vec![Message::system("s")];
                for (t, shard) in task.shards.iter().enumerate() {
                    messages.push(Message::user(shard.shard.clone()));
                    if t + 1 < n {
                        messages.push(Message::assistant(format!(
                            "{DRAFT_LEAD}{prev}{DRAFT_TAIL}"
                        )));
                    }
                }
                let request = Request {
                    model: "lc".into(),
                    messages,
                    config: Default::default(),
                    seed: Some(seed),
                    tools: Vec::new(),
                    tool_choice: None,
                };
                right[i] += u32::from(sim.reply(&request).unwrap().text == reference);
            }
        }
        let rate = |k: usize| f64::from(right[k]) / f64::from(trials as u32);
        let (after_wrong, after_right) = (
            s.skill * (1.0 - s.anchoring),
            s.skill + s.carry * (1.0 - s.skill),
        );
        assert!(
            (rate(0) - after_wrong).abs() < 0.08,
            "{}: {} after a wrong draft",
            task.task_id,
            rate(0)
        );
        assert!(
            (rate(1) - after_right).abs() < 0.08,
            "{}: {} after a right draft",
            task.task_id,
            rate(1)
        );
    }
}

/// See: issue 10: a LiC code item carries no reference solution; a simulated model
/// answers it with the documented wrong attempt instead of failing the call.
#[test]
fn issue_10_code_items_without_a_reference_get_a_wrong_attempt() {
    let mut task = baton_data::sample_dataset()
        .tasks
        .into_iter()
        .find(|t| t.family == baton_types::Family::Code)
        .expect("a code task");
    let sample = task.sample.as_object_mut().unwrap();
    sample.remove(baton_models::REFERENCE_SOLUTION_KEY);
    sample.remove(baton_models::WRONG_SOLUTIONS_KEY);
    let sim = SimProvider::new(
        vec![task.clone()],
        [("hc".to_string(), SimSettings::preset("hc"))].into(),
    )
    .unwrap();
    let mut messages = vec![Message::system("s")];
    for shard in &task.shards {
        messages.push(Message::user(shard.shard.clone()));
        messages.push(Message::assistant("draft"));
    }
    messages.pop();
    for seed in 0..20 {
        let request = Request {
            model: "hc".into(),
            messages: messages.clone(),
            config: Default::default(),
            seed: Some(seed),
            tools: Vec::new(),
            tool_choice: None,
        };
        let reply = sim.reply(&request).expect("no call fails").text;
        assert_eq!(reply, wrong_response(&task, 0).unwrap(), "seed {seed}");
        assert!(reply.contains("return None"), "{reply}");
    }
}

/// A `[models.x.sim]` table refines its `sim/…` preset: adding only `latency_ms` keeps
/// the preset's skill (it used to fall back to the default, 0.6 for `sim/lc`).
#[test]
fn issue_35_a_sim_table_refines_its_preset() {
    let text = crate::spec_text(1, 1, false).replace(
        "model = \"sim/lc\"",
        "model = \"sim/lc\"\n[models.lc.sim]\nlatency_ms = 5",
    );
    let spec = baton_runner::ExperimentSpec::parse("it.toml", &text).unwrap();
    assert_eq!(
        spec.models["lc"].sim,
        Some(SimSettings {
            skill: 0.45,
            anchoring: 0.35,
            carry: 0.5,
            latency_ms: 5,
        })
    );
    // a model without a table keeps its preset as it was
    assert_eq!(spec.models["hc"].sim, None);
    let text = text.replace("latency_ms = 5", "skill = 0.7\ncary = 0.1");
    let err = baton_runner::ExperimentSpec::parse("it.toml", &text)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err.trim_end().lines().last(),
        Some(
            "unknown field `cary`, expected one of `skill`, `anchoring`, `carry`, \
             `latency_ms`; did you mean `carry`?"
        ),
        "{err}"
    );
    // a value out of range names its key under the model
    let text = text.replace("skill = 0.7\ncary = 0.1", "skill = 1.5");
    let err = baton_runner::ExperimentSpec::parse("it.toml", &text)
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with("models.lc.sim: skill = 1.5 is outside 0..=1"),
        "{err}"
    );

    // an agent experiment's table alike
    let agent = "kind = \"agent\"\nname = \"a\"\ndataset = \"agent-sample\"\n\
                 [models.lc]\nmodel = \"sim/lc\"\n[models.lc.sim]\nlatency_ms = 7\n\
                 [models.hc]\nmodel = \"sim/hc\"\n[[pairs]]\nlow = \"lc\"\nhigh = \"hc\"\n";
    let spec = baton_runner::agent::AgentSpec::parse("a.toml", agent).unwrap();
    assert_eq!(
        spec.model("lc").unwrap().sim,
        Some(baton_agent::SimAgentSettings {
            skill: 0.45,
            malformed: 0.03,
            latency_ms: 7,
        })
    );
}
