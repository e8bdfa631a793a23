//! The agent's four templates (system, instance, observation, format error): baton's own
//! by default, or a user's mini-SWE-agent YAML file read key for key.
//!
//! Templates are Jinja, rendered with `minijinja`, so a mini-SWE-agent file renders as it
//! does there. The keys read are `agent.system_template`, `agent.instance_template`,
//! `model.observation_template` and `model.format_error_template`, with `model.model_kwargs`
//! (request settings) and `environment.env` (every command's variables: mini-SWE-agent's
//! SWE-bench config sets `PAGER`, `BASH_ENV` and others there), which the runner merges
//! under the experiment's own. Every other key of such a file (its limits, the rest of its
//! environment, its model) is ignored: baton's limits and sandbox come from the experiment
//! file. A file may leave keys out; baton's own fill them.
//!
//! From a user's file, baton also learns the two protocol strings its text names: the
//! submission marker (the word after `echo` in an `echo WORD && …` line of the instance
//! template) and the fence tag of the text protocol (the first "```tag" in the system
//! template). Both can be set in the experiment file instead.

use std::collections::BTreeMap;
use std::path::Path;

use minijinja::Environment;
use serde::{Deserialize, Serialize};

use crate::error::AgentError;

/// baton's own templates, version 1 (`templates.yaml` beside this file).
pub const DEFAULT_TEMPLATES: &str = include_str!("templates.yaml");

/// The version of [`DEFAULT_TEMPLATES`], stored with a run; bump it on any change.
pub const DEFAULT_TEMPLATES_VERSION: &str = "baton-agent-templates-1";

/// baton's own submission marker: a command whose output's first line is this ends the
/// run, and the rest of the output is the submission.
pub const DEFAULT_SUBMIT_MARKER: &str = "BATON_SUBMIT_FINAL_DIFF";

/// baton's own fence tag for the text protocol.
pub const DEFAULT_FENCE: &str = "bash";

/// The four template texts, where they came from, and the protocol strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentTemplates {
    /// `baton-agent-templates-1`, or the path of the user's file.
    pub source: String,
    /// The system prompt.
    pub system: String,
    /// The first user message; `{{task}}` is the instruction.
    pub instance: String,
    /// One command's observation.
    pub observation: String,
    /// The answer to a reply that holds no runnable command.
    pub format_error: String,
    /// The submission marker.
    pub submit_marker: String,
    /// The text protocol's fence tag.
    pub fence: String,
    /// The file's `model.model_kwargs`: request settings its harness sends with every
    /// call (the runner merges them under the experiment's own model settings).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub model_kwargs: serde_json::Map<String, serde_json::Value>,
    /// The file's `environment.env`: variables its harness gives every command (the
    /// runner merges them under the experiment's `[environment] env`). A number or a
    /// boolean is written as Python writes it (`1`, `True`), as mini-SWE-agent passes
    /// it on.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
struct File {
    #[serde(default)]
    agent: AgentPart,
    #[serde(default)]
    model: ModelPart,
    #[serde(default)]
    environment: EnvironmentPart,
}

#[derive(Deserialize, Default)]
struct EnvironmentPart {
    #[serde(default)]
    env: BTreeMap<String, serde_json::Value>,
}

/// `environment.env` as strings, the way Python's `f"{key}={value}"` writes each value.
fn env_strings(
    env: BTreeMap<String, serde_json::Value>,
    origin: &str,
) -> Result<BTreeMap<String, String>, AgentError> {
    use serde_json::Value;
    env.into_iter()
        .map(|(key, value)| {
            let text = match value {
                Value::String(s) => s,
                Value::Bool(true) => "True".into(),
                Value::Bool(false) => "False".into(),
                Value::Number(n) => n.to_string(),
                Value::Null => "None".into(),
                Value::Array(_) | Value::Object(_) => {
                    return Err(AgentError::invalid(
                        origin,
                        None,
                        Some(&format!("environment.env.{key}")),
                        "a list or map, where a variable's value goes",
                    ));
                }
            };
            if key.is_empty() || key.contains('=') || key.contains('\0') || text.contains('\0') {
                return Err(AgentError::invalid(
                    origin,
                    None,
                    Some(&format!("environment.env.{key}")),
                    "not a variable (a name with no \"=\", values without NUL)",
                ));
            }
            Ok((key, text))
        })
        .collect()
}

#[derive(Deserialize, Default)]
struct AgentPart {
    system_template: Option<String>,
    instance_template: Option<String>,
}

#[derive(Deserialize, Default)]
struct ModelPart {
    observation_template: Option<String>,
    format_error_template: Option<String>,
    #[serde(default)]
    model_kwargs: serde_json::Map<String, serde_json::Value>,
}

fn parse_file(text: &str, origin: &str) -> Result<File, AgentError> {
    // The file is a map with other keys too; unknown ones are ignored.
    serde_saphyr::from_str::<File>(text)
        .map_err(|e| AgentError::invalid(origin, None, None, format!("not a template file: {e}")))
}

impl Default for AgentTemplates {
    fn default() -> Self {
        let f = parse_file(DEFAULT_TEMPLATES, DEFAULT_TEMPLATES_VERSION)
            .expect("baton's own templates parse");
        AgentTemplates {
            source: DEFAULT_TEMPLATES_VERSION.into(),
            system: f.agent.system_template.expect("system_template"),
            instance: f.agent.instance_template.expect("instance_template"),
            observation: f.model.observation_template.expect("observation_template"),
            format_error: f
                .model
                .format_error_template
                .expect("format_error_template"),
            submit_marker: DEFAULT_SUBMIT_MARKER.into(),
            fence: DEFAULT_FENCE.into(),
            model_kwargs: f.model.model_kwargs,
            env: BTreeMap::new(),
        }
    }
}

impl AgentTemplates {
    /// Read a user's template file (mini-SWE-agent's YAML layout); keys it lacks keep
    /// baton's own text, and the marker and fence are learned from its text.
    pub fn load(path: &Path) -> Result<Self, AgentError> {
        let text = std::fs::read_to_string(path).map_err(|e| AgentError::io(path, "read", e))?;
        Self::from_yaml(&text, &path.display().to_string())
    }

    /// [`load`](Self::load) from text; `origin` names it in errors and in the record.
    pub fn from_yaml(text: &str, origin: &str) -> Result<Self, AgentError> {
        let f = parse_file(text, origin)?;
        let base = AgentTemplates::default();
        let t = AgentTemplates {
            source: origin.to_string(),
            submit_marker: f
                .agent
                .instance_template
                .as_deref()
                .and_then(marker_in)
                .unwrap_or(base.submit_marker),
            fence: f
                .agent
                .system_template
                .as_deref()
                .and_then(fence_in)
                .unwrap_or(base.fence),
            system: f.agent.system_template.unwrap_or(base.system),
            instance: f.agent.instance_template.unwrap_or(base.instance),
            observation: f.model.observation_template.unwrap_or(base.observation),
            format_error: f.model.format_error_template.unwrap_or(base.format_error),
            model_kwargs: f.model.model_kwargs,
            env: env_strings(f.environment.env, origin)?,
        };
        t.compile()?;
        Ok(t)
    }

    /// Check that every template compiles and renders with the variables the loop
    /// gives it, naming the key that does not, so a broken file fails before any call.
    pub fn compile(&self) -> Result<(), AgentError> {
        let env = Environment::new();
        for (key, text) in self.keys() {
            env.template_from_str(text)
                .map_err(|e| AgentError::invalid(&self.source, None, Some(key), e.to_string()))?;
        }
        for protocol in ["tool_calls", "text"] {
            let common = minijinja::context! {
                task => "task",
                submit_marker => &self.submit_marker,
                fence => &self.fence,
                protocol => protocol,
            };
            self.render("agent.system_template", &common)?;
            self.render("agent.instance_template", &common)?;
            for finish_reason in ["stop", "length", "tool_calls"] {
                self.render(
                    "model.format_error_template",
                    minijinja::context! {
                        error => "error",
                        actions => Vec::<String>::new(),
                        finish_reason => finish_reason,
                        has_tool_calls => false,
                        n_model_calls => 1,
                        step_limit => 1,
                        ..common.clone()
                    },
                )?;
            }
        }
        for (code, text, exception) in [(0, "x", ""), (-1, &"x".repeat(10_001)[..], "timeout")] {
            self.render(
                "model.observation_template",
                minijinja::context! {
                    output => minijinja::context! {
                        returncode => code, output => text, exception_info => exception,
                    },
                },
            )?;
        }
        Ok(())
    }

    fn keys(&self) -> [(&'static str, &str); 4] {
        [
            ("agent.system_template", &self.system),
            ("agent.instance_template", &self.instance),
            ("model.observation_template", &self.observation),
            ("model.format_error_template", &self.format_error),
        ]
    }

    /// Render one template with `ctx` (a `minijinja::context!` or any serializable value).
    pub(crate) fn render(
        &self,
        key: &'static str,
        ctx: impl Serialize,
    ) -> Result<String, AgentError> {
        let text = self
            .keys()
            .into_iter()
            .find(|(k, _)| *k == key)
            .map(|(_, t)| t)
            .expect("a known template key");
        let env = Environment::new();
        let rendered = env
            .render_str(text, ctx)
            .map_err(|e| AgentError::invalid(&self.source, None, Some(key), e.to_string()))?;
        // A user's file renders exactly as Jinja renders it (one trailing newline
        // dropped, as here); baton's own texts are also trimmed of trailing spaces.
        Ok(if self.source == DEFAULT_TEMPLATES_VERSION {
            rendered.trim_end().to_string()
        } else {
            rendered
        })
    }
}

/// The word after `echo` in an `echo WORD && …` line: upper case, digits, underscores,
/// eight or more characters.
pub(crate) fn marker_in(text: &str) -> Option<String> {
    text.split("echo ").skip(1).find_map(|rest| {
        let word: String = rest
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        (word.len() >= 8 && rest[word.len()..].trim_start().starts_with("&&")).then_some(word)
    })
}

/// The tag of the first fenced block in `text` ("```tag").
pub(crate) fn fence_in(text: &str) -> Option<String> {
    text.split("```").skip(1).step_by(2).find_map(|rest| {
        let tag: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        (!tag.is_empty()).then_some(tag)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_environment_env_is_read_as_python_writes_it() {
        let t = AgentTemplates::from_yaml(
            "environment:\n  cwd: /testbed\n  env:\n    PAGER: cat\n    TQDM_DISABLE: 1\n    FLAG: true\n    PIP_PROGRESS_BAR: 'off'\n",
            "mini.yaml",
        )
        .unwrap();
        let env: Vec<(&str, &str)> = t
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            env,
            [
                ("FLAG", "True"),
                ("PAGER", "cat"),
                ("PIP_PROGRESS_BAR", "off"),
                ("TQDM_DISABLE", "1")
            ]
        );
        assert!(AgentTemplates::default().env.is_empty());
        let err = AgentTemplates::from_yaml("environment:\n  env:\n    PATHS: [a, b]\n", "m.yaml")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("m.yaml: key \"environment.env.PATHS\": "),
            "{err}"
        );
        let err = AgentTemplates::from_yaml("environment:\n  env:\n    \"A=B\": x\n", "m.yaml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("environment.env.A=B"), "{err}");
    }

    #[test]
    fn baton_templates_render_both_protocols() {
        let t = AgentTemplates::default();
        t.compile().unwrap();
        let text = t
            .render(
                "agent.system_template",
                minijinja::context! {protocol => "text", fence => "bash"},
            )
            .unwrap();
        assert!(text.contains("```bash\nls\n```"), "{text}");
        let tools = t
            .render(
                "agent.system_template",
                minijinja::context! {protocol => "tool_calls", fence => "bash"},
            )
            .unwrap();
        assert!(tools.contains("`bash` tool"), "{tools}");
        let inst = t
            .render(
                "agent.instance_template",
                minijinja::context! {task => "Fix add().", submit_marker => DEFAULT_SUBMIT_MARKER},
            )
            .unwrap();
        assert!(inst.contains("Fix add()."));
        assert!(inst.contains("echo BATON_SUBMIT_FINAL_DIFF && git add -A"));
    }

    #[test]
    fn marker_and_fence_are_learned_from_text() {
        assert_eq!(
            marker_in("run:\n    echo DONE_AND_SUBMIT_NOW && cat patch.txt\n").as_deref(),
            Some("DONE_AND_SUBMIT_NOW")
        );
        assert_eq!(marker_in("echo hello && ls"), None);
        assert_eq!(
            fence_in("like this\n```my_cmd\nls\n```\n").as_deref(),
            Some("my_cmd")
        );
        assert_eq!(fence_in("no fences"), None);
    }

    #[test]
    fn a_partial_user_file_keeps_baton_text_for_the_rest_and_names_a_broken_key() {
        let t = AgentTemplates::from_yaml(
            "agent:\n  system_template: |\n    Be brief.\n    ```cmd\n    x\n    ```\n  step_limit: 5\nenvironment:\n  cwd: /x\n",
            "mine.yaml",
        )
        .unwrap();
        assert_eq!(t.system, "Be brief.\n```cmd\nx\n```\n");
        assert_eq!(t.fence, "cmd");
        assert_eq!(t.instance, AgentTemplates::default().instance);
        let err =
            AgentTemplates::from_yaml("model:\n  observation_template: '{% if %}'\n", "bad.yaml")
                .unwrap_err()
                .to_string();
        assert!(
            err.contains("bad.yaml") && err.contains("model.observation_template"),
            "{err}"
        );
    }
}
