//! Claims run at the anchor and now, and what the two runs say.
//!
//! A claim that does not hold *now* fails the document whatever its anchor says: held at the
//! anchor (broken since), failed there too (never held), or no answer there (the anchor is
//! `uncommitted`, or its run timed out or lacked a tool). A run at the anchor that times out
//! or cannot find its program (126, 127) gives no answer rather than "never held": a missing
//! dependency is not a false claim. A run now that times out or cannot find its program does
//! not hold. A claim not run now (skipped, over the cap, out of time) is [`Class::NotRun`]:
//! unverified, and it fails the document unless unverified claims are allowed.

use std::fmt;

use serde::Serialize;

use crate::exec;

/// One run of a claim's check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimStatus {
    /// Exited 0.
    Holds,
    /// Exited non-zero (or, for the run now, timed out or could not find its program).
    Fails,
    /// No answer: not run (no anchor, skipped, out of time), could not start, or (at the
    /// anchor) timed out or could not find its program.
    NotRun,
}

/// A claim's verdict, from its two runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// Held at the anchor and holds now.
    HeldAndHolds,
    /// Held at the anchor, fails now: something since broke it.
    HeldNowBroken,
    /// Failed at the anchor: the document claimed something that was not true when written.
    NeverHeld,
    /// Fails now; the anchor gave no answer.
    FailsNow,
    /// Holds now, and the anchor gave no answer.
    CannotTell,
    /// Not run now (skipped as destructive, over the claim cap, out of time, or the sandbox
    /// could not start): the claim is unverified, which fails the document unless
    /// `--allow-unverified` is given.
    NotRun,
}

impl Class {
    /// Whether the claim fails the document.
    pub fn fails(self) -> bool {
        matches!(
            self,
            Class::HeldNowBroken | Class::NeverHeld | Class::FailsNow
        )
    }

    /// Whether the claim was not verified (it fails the document unless unverified claims
    /// are allowed).
    pub fn unverified(self) -> bool {
        self == Class::NotRun
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Class::HeldAndHolds => "held-and-holds",
            Class::HeldNowBroken => "held-now-broken",
            Class::NeverHeld => "never-held",
            Class::FailsNow => "fails-now",
            Class::CannotTell => "cannot-tell",
            Class::NotRun => "not-run",
        })
    }
}

/// One run's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRun {
    /// The outcome.
    pub status: ClaimStatus,
    /// The tail of its output when it did not hold, or why it did not run.
    pub tail: String,
}

impl ClaimRun {
    /// A run that did not happen, and why.
    pub fn not_run(why: impl Into<String>) -> ClaimRun {
        ClaimRun {
            status: ClaimStatus::NotRun,
            tail: why.into(),
        }
    }

    /// The run at the anchor: a timeout or a missing program gives no answer.
    pub fn at_anchor(run: &exec::Run) -> ClaimRun {
        let status = match run.exit {
            exec::Exit::Code(0) => ClaimStatus::Holds,
            exec::Exit::Code(126 | 127) | exec::Exit::NotStarted(_) | exec::Exit::TimedOut(_) => {
                ClaimStatus::NotRun
            }
            _ => ClaimStatus::Fails,
        };
        ClaimRun::with(status, run)
    }

    /// The run now: only exit 0 holds; a run that could not start gives no answer.
    pub fn now(run: &exec::Run) -> ClaimRun {
        let status = match run.exit {
            exec::Exit::Code(0) => ClaimStatus::Holds,
            exec::Exit::NotStarted(_) => ClaimStatus::NotRun,
            _ => ClaimStatus::Fails,
        };
        ClaimRun::with(status, run)
    }

    fn with(status: ClaimStatus, run: &exec::Run) -> ClaimRun {
        let mut tail = if status == ClaimStatus::Holds {
            String::new()
        } else {
            run.tail()
        };
        if matches!(run.exit, exec::Exit::Code(127)) {
            tail.push_str(
                "\n[exit 127: a program was not found; the sandbox sees the host's /usr, /bin and /lib only]",
            );
        }
        ClaimRun {
            status,
            tail: tail.trim().to_string(),
        }
    }
}

/// A claim with both of its runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimResult {
    /// Its file line.
    pub line: usize,
    /// Its label.
    pub label: String,
    /// Its check.
    pub command: String,
    /// The run in a copy of the tree at the anchor.
    pub at_anchor: ClaimRun,
    /// The run in a copy of the current tree.
    pub now: ClaimRun,
}

impl ClaimResult {
    /// The verdict of the two runs.
    pub fn class(&self) -> Class {
        use ClaimStatus::*;
        match (self.at_anchor.status, self.now.status) {
            (Holds, Holds) => Class::HeldAndHolds,
            (Holds, Fails) => Class::HeldNowBroken,
            (Fails, _) => Class::NeverHeld,
            (NotRun, Fails) => Class::FailsNow,
            (NotRun, Holds) => Class::CannotTell,
            (Holds | NotRun, NotRun) => Class::NotRun,
        }
    }

    /// The tails of the runs that did not hold, labelled.
    pub fn output_tail(&self) -> String {
        let mut parts = Vec::new();
        for (name, run) in [("at the anchor", &self.at_anchor), ("now", &self.now)] {
            if run.status != ClaimStatus::Holds && !run.tail.is_empty() {
                parts.push(format!("[{name}]\n{}", run.tail));
            }
        }
        parts.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(exit: exec::Exit) -> exec::Run {
        exec::Run {
            exit,
            output: b"out".to_vec(),
            errors: Vec::new(),
            elapsed: std::time::Duration::ZERO,
        }
    }

    #[test]
    fn a_claim_failing_now_fails_whatever_the_anchor() {
        let timed_out = exec::Exit::TimedOut(std::time::Duration::from_secs(1));
        for anchor in [
            ClaimRun::not_run("no anchor commit"),
            ClaimRun::at_anchor(&run(timed_out.clone())),
            ClaimRun::at_anchor(&run(exec::Exit::Code(127))),
        ] {
            for now in [
                exec::Exit::Code(1),
                exec::Exit::Code(127),
                timed_out.clone(),
            ] {
                let r = ClaimResult {
                    line: 1,
                    label: "x".into(),
                    command: "x".into(),
                    at_anchor: anchor.clone(),
                    now: ClaimRun::now(&run(now.clone())),
                };
                assert_eq!(r.class(), Class::FailsNow, "{anchor:?} {now:?}");
                assert!(r.class().fails());
            }
        }
        assert_eq!(
            ClaimRun::at_anchor(&run(exec::Exit::Code(127))).status,
            ClaimStatus::NotRun,
            "a missing tool at the anchor is no answer, not never-held"
        );
    }
}
