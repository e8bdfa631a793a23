//! `baton show`: what a model will see for one task.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use baton_data::Templates;
use baton_types::Baseline;
use serde_json::{Value, json};

use crate::Outcome;
use crate::cli::ShowArgs;
use crate::printer::Printer;

/// The templates `--templates` and `--lic-dir` name: baton's own when neither is given,
/// LiC's from the checkout for `lic`, else an edited folder.
pub fn templates(templates: Option<&Path>, lic_dir: Option<&PathBuf>) -> Result<Templates> {
    let lic = templates == Some(Path::new(baton_data::lic::LIC_TEMPLATES));
    Ok(match (templates, lic_dir) {
        (Some(_), Some(dir)) if lic => Templates::lic(dir)?,
        (Some(_), None) if lic => {
            bail!("--templates lic needs --lic-dir DIR: your lost_in_conversation checkout")
        }
        (_, Some(_)) => bail!("--lic-dir is read only with --templates lic"),
        (Some(dir), None) => Templates::from_dir(dir)?,
        (None, None) => Templates::embedded(),
    })
}

pub fn show(args: ShowArgs, printer: &Printer) -> Result<Outcome> {
    let dataset = crate::commands::data::load(&args.dataset)?;
    let task = dataset.task(&args.task_id).with_context(|| {
        format!(
            "{}: no task {:?} (of {} tasks)",
            args.dataset.display(),
            args.task_id,
            dataset.tasks.len()
        )
    })?;
    let templates = templates(args.templates.as_deref(), args.lic_dir.as_ref())?;
    let schedule = baton_data::build_schedule(task, &templates)?;
    // LiC's single-turn baselines: built from LiC's templates only; with baton's own
    // there are none (null, with why).
    let baselines: Vec<(Baseline, Result<String, String>)> = Baseline::ALL
        .into_iter()
        .map(|b| {
            let prompt = baton_data::baseline_prompt(task, b, &templates);
            (b, prompt.map_err(|e| e.to_string()))
        })
        .collect();
    if args.json {
        let mut value = json!({
            "task_id": task.task_id,
            "family": task.family.as_str(),
            "system": schedule.system,
            "turns": schedule.user_turns,
        });
        for (b, prompt) in &baselines {
            match prompt {
                Ok(p) => value[b.as_str()] = json!(p),
                Err(e) => {
                    value[b.as_str()] = Value::Null;
                    value[format!("{}_error", b.as_str())] = json!(e);
                }
            }
        }
        printer.line(&serde_json::to_string_pretty(&value)?)?;
        return Ok(Outcome::Success);
    }
    let mut out = format!(
        "task {} ({}), {} turns\n\n== system\n{}\n",
        task.task_id,
        task.family,
        schedule.user_turns.len(),
        schedule.system
    );
    for (i, turn) in schedule.user_turns.iter().enumerate() {
        out.push_str(&format!("\n== user turn {}\n{turn}\n", i + 1));
    }
    for (b, prompt) in &baselines {
        match prompt {
            Ok(p) => out.push_str(&format!("\n== {} (single turn)\n{p}\n", b.as_str())),
            Err(e) => out.push_str(&format!("\n== {}: none ({e})\n", b.as_str())),
        }
    }
    printer.out(&out)?;
    Ok(Outcome::Success)
}
