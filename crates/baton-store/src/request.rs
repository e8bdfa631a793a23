//! Content-addressed request storage: a request is split into its parameters and its
//! messages, each message is stored once, and the message list is a node of a prefix
//! tree. The layout and the reconstruction rule are documented in [`crate::schema`].

use rusqlite::{Connection, OptionalExtension, params};
use serde::Deserialize;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

/// The id of the empty message list (the prefix tree's root).
pub(crate) const EMPTY_LIST: i64 = 0;

/// A request cut into its parameters and the exact text of each message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Split<'a> {
    /// The request with an empty `messages` array.
    pub params: String,
    /// The byte offset in `params` just inside that array.
    pub messages_at: usize,
    /// Each message's JSON text, as it appears in the request.
    pub messages: Vec<&'a str>,
}

#[derive(Deserialize)]
struct Messages<'a> {
    #[serde(borrow)]
    messages: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
struct Array<'a> {
    #[serde(borrow)]
    messages: &'a RawValue,
}

/// Split `request` if it is a JSON object with one `messages` array whose exact bytes
/// [`join`] gives back; `None` means "store it whole".
pub(crate) fn split(request: &str) -> Option<Split<'_>> {
    let items = serde_json::from_str::<Messages<'_>>(request).ok()?.messages;
    // the array runs from the `[` before its first item to the `]` after its last
    let (start, end) = match (items.first(), items.last()) {
        (Some(first), Some(last)) => {
            let before = request[..offset_in(request, first.get())?].trim_end();
            let after = offset_in(request, last.get())? + last.get().len();
            let rest = request[after..].trim_start();
            if !before.ends_with('[') || !rest.starts_with(']') {
                return None;
            }
            (before.len() - 1, request.len() - rest.len() + 1)
        }
        _ => {
            // an empty array: where it is, the parser says
            let array = serde_json::from_str::<Array<'_>>(request).ok()?.messages;
            let start = offset_in(request, array.get())?;
            (start, start + array.get().len())
        }
    };
    let split = Split {
        params: format!("{}[]{}", &request[..start], &request[end..]),
        messages_at: start + 1,
        messages: items.iter().map(|m| m.get()).collect(),
    };
    joins_back(&split, request).then_some(split)
}

/// Whether [`join`] gives `whole` back from `split`, without building it.
fn joins_back(split: &Split<'_>, whole: &str) -> bool {
    let (params, at) = (&split.params, split.messages_at);
    if !params.is_char_boundary(at) {
        return false;
    }
    let mut rest = match whole.strip_prefix(&params[..at]) {
        Some(rest) => rest,
        None => return false,
    };
    for (i, m) in split.messages.iter().enumerate() {
        let next = if i > 0 {
            rest.strip_prefix(',')
        } else {
            Some(rest)
        };
        match next.and_then(|r| r.strip_prefix(m)) {
            Some(r) => rest = r,
            None => return false,
        }
    }
    rest == &params[at..]
}

/// Where `part` (a slice of `whole`) starts in `whole`.
fn offset_in(whole: &str, part: &str) -> Option<usize> {
    let offset = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (offset + part.len() <= whole.len()).then_some(offset)
}

/// The request text from its parameters and messages; `None` when `at` is not a
/// character boundary of `params`.
pub(crate) fn join<S: AsRef<str>>(params: &str, at: usize, messages: &[S]) -> Option<String> {
    if !params.is_char_boundary(at) {
        return None;
    }
    let len = params.len() + messages.iter().map(|m| m.as_ref().len() + 1).sum::<usize>();
    let mut out = String::with_capacity(len);
    out.push_str(&params[..at]);
    for (i, m) in messages.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(m.as_ref());
    }
    out.push_str(&params[at..]);
    Some(out)
}

/// The sha256 of `text` in lowercase hex.
pub(crate) fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The prefix-tree edges the writer has read or written, (parent node, message's
/// sha256) → node, so that the messages of a request already stored (a conversation's
/// history, sent again at every turn) are found without a query each.
///
/// An edge is only ever added once its row is in the transaction; the writer clears the
/// whole map whenever a command's writes may have been undone (a command that failed, a
/// group that did not commit), so every edge it holds is in the file.
#[derive(Default)]
pub(crate) struct Edges(std::collections::HashMap<(i64, [u8; 32]), i64>);

impl Edges {
    /// The most edges held (about 64 bytes each); past it the map starts over.
    const MAX: usize = 1 << 16;

    /// Forget every edge.
    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }
}

/// Store each message once and return the prefix-tree node of the whole list.
pub(crate) fn intern_list(
    conn: &Connection,
    edges: &mut Edges,
    messages: &[&str],
) -> rusqlite::Result<i64> {
    intern_after(conn, edges, EMPTY_LIST, messages)
}

/// Store each message once and return the node of list `parent` followed by `messages`.
pub(crate) fn intern_after(
    conn: &Connection,
    edges: &mut Edges,
    parent: i64,
    messages: &[&str],
) -> rusqlite::Result<i64> {
    let mut node = parent;
    for m in messages {
        let sha: [u8; 32] = Sha256::digest(m.as_bytes()).into();
        node = match edges.0.get(&(node, sha)) {
            Some(next) => *next,
            None => {
                let next = intern_edge(conn, node, &sha, m)?;
                if edges.0.len() >= Edges::MAX {
                    edges.clear();
                }
                edges.0.insert((node, sha), next);
                next
            }
        };
    }
    Ok(node)
}

/// The node of list `parent` followed by message `m` (whose sha256 is `sha`), each
/// stored if it is not yet.
fn intern_edge(conn: &Connection, parent: i64, sha: &[u8; 32], m: &str) -> rusqlite::Result<i64> {
    let mut find_message = conn.prepare_cached("SELECT id FROM messages WHERE sha256 = ?1")?;
    let message = match find_message
        .query_row([&sha[..]], |r| r.get::<_, i64>(0))
        .optional()?
    {
        Some(id) => id,
        None => {
            conn.prepare_cached("INSERT INTO messages (sha256, json) VALUES (?1, ?2)")?
                .execute(params![&sha[..], m])?;
            conn.last_insert_rowid()
        }
    };
    let mut find_node =
        conn.prepare_cached("SELECT id FROM message_lists WHERE parent = ?1 AND message = ?2")?;
    match find_node
        .query_row([parent, message], |r| r.get::<_, i64>(0))
        .optional()?
    {
        Some(id) => Ok(id),
        None => {
            conn.prepare_cached("INSERT INTO message_lists (parent, message) VALUES (?1, ?2)")?
                .execute([parent, message])?;
            Ok(conn.last_insert_rowid())
        }
    }
}

/// The messages of list `node`, first to last.
pub(crate) fn list_messages(conn: &Connection, node: i64) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "WITH RECURSIVE chain (id, parent, message, depth) AS (
             SELECT id, parent, message, 0 FROM message_lists WHERE id = ?1
             UNION ALL
             SELECT l.id, l.parent, l.message, c.depth + 1
             FROM message_lists l JOIN chain c ON l.id = c.parent
         )
         SELECT m.json FROM chain JOIN messages m ON m.id = chain.message
         ORDER BY chain.depth DESC",
    )?;
    let rows = stmt.query_map([node], |r| r.get::<_, String>(0))?;
    rows.collect()
}

/// The message lists of one reading, [`list_messages`]'s result for each: the calls of
/// an episode share every node but their newest, so each node and message is read once
/// for all of them, not once per call that carries it.
#[derive(Default)]
pub(crate) struct Lists {
    /// A node's parent and message.
    nodes: std::collections::HashMap<i64, Option<(i64, i64)>>,
    /// A message's JSON text.
    messages: std::collections::HashMap<i64, Option<String>>,
}

impl Lists {
    /// The messages of list `node`, first to last, as [`list_messages`] gives them (a
    /// node or message that is missing ends the chain or is left out, as its join does).
    pub(crate) fn messages(
        &mut self,
        conn: &Connection,
        node: i64,
    ) -> rusqlite::Result<Vec<String>> {
        let mut find_node =
            conn.prepare_cached("SELECT parent, message FROM message_lists WHERE id = ?1")?;
        let mut find_message = conn.prepare_cached("SELECT json FROM messages WHERE id = ?1")?;
        let mut ids = Vec::new();
        let mut at = node;
        // a parent is always an older node: the walk ends, but a damaged file could
        // make a loop, which stops at a node seen twice
        let mut seen = std::collections::HashSet::new();
        while seen.insert(at) {
            let found = match self.nodes.get(&at) {
                Some(found) => *found,
                None => {
                    let found = find_node
                        .query_row([at], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
                        .optional()?;
                    self.nodes.insert(at, found);
                    found
                }
            };
            let Some((parent, message)) = found else {
                break;
            };
            ids.push(message);
            at = parent;
        }
        let mut out = Vec::with_capacity(ids.len());
        for id in ids.into_iter().rev() {
            let text = match self.messages.entry(id) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => e.insert(
                    find_message
                        .query_row([id], |r| r.get::<_, String>(0))
                        .optional()?,
                ),
            };
            if let Some(text) = text {
                out.push(text.clone());
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An in-memory database with the two tables of a message list.
    fn tables() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE messages (id INTEGER PRIMARY KEY, sha256 BLOB NOT NULL UNIQUE, json TEXT NOT NULL);
             CREATE TABLE message_lists (id INTEGER PRIMARY KEY, parent INTEGER NOT NULL,
                 message INTEGER NOT NULL, UNIQUE (parent, message));",
        )
        .unwrap();
        conn
    }

    #[test]
    fn lists_read_once_give_what_the_recursive_query_gives() {
        let conn = tables();
        let edges = &mut Edges::default();
        let a = intern_list(&conn, edges, &["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]).unwrap();
        let b = intern_list(
            &conn,
            edges,
            &["{\"a\":1}", "{\"b\":2}", "{\"d\":4}", "{\"a\":1}"],
        )
        .unwrap();
        let short = intern_list(&conn, edges, &["{\"a\":1}"]).unwrap();
        let mut lists = Lists::default();
        for node in [a, b, short, EMPTY_LIST, a, 999] {
            assert_eq!(
                lists.messages(&conn, node).unwrap(),
                list_messages(&conn, node).unwrap(),
                "node {node}"
            );
        }
        assert_eq!(
            lists.messages(&conn, b).unwrap(),
            ["{\"a\":1}", "{\"b\":2}", "{\"d\":4}", "{\"a\":1}"]
        );
        // a damaged chain ends where the recursive query ends it
        conn.execute("DELETE FROM messages WHERE json = '{\"b\":2}'", [])
            .unwrap();
        let mut fresh = Lists::default();
        assert_eq!(
            fresh.messages(&conn, b).unwrap(),
            list_messages(&conn, b).unwrap()
        );
    }

    #[test]
    fn edges_known_give_the_nodes_the_file_gives() {
        let conn = tables();
        let rows = |conn: &Connection| -> (i64, i64) {
            let count = |t: &str| {
                conn.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
                    .unwrap()
            };
            (count("messages"), count("message_lists"))
        };
        let turn1 = ["{\"s\":0}", "{\"u\":1}"];
        let turn2 = ["{\"s\":0}", "{\"u\":1}", "{\"a\":1}", "{\"u\":2}"];
        let edges = &mut Edges::default();
        let first = intern_list(&conn, edges, &turn1).unwrap();
        let second = intern_list(&conn, edges, &turn2).unwrap();
        assert_eq!(edges.0.len(), 4);
        assert_eq!(rows(&conn), (4, 4));
        // the history found in the map: no row added, the same nodes
        assert_eq!(intern_list(&conn, edges, &turn2).unwrap(), second);
        assert_eq!(intern_list(&conn, edges, &turn1).unwrap(), first);
        assert_eq!(rows(&conn), (4, 4));
        // a writer with no edges known finds the same nodes in the file
        let none = &mut Edges::default();
        assert_eq!(intern_list(&conn, none, &turn2).unwrap(), second);
        assert_eq!(intern_list(&conn, none, &turn1).unwrap(), first);
        assert_eq!(
            list_messages(&conn, second).unwrap(),
            turn2.map(String::from)
        );
        // an edge from another parent is its own node
        let after = intern_after(&conn, edges, first, &["{\"u\":2}"]).unwrap();
        assert_ne!(after, second);
        assert_eq!(rows(&conn), (4, 5));
        assert_eq!(
            list_messages(&conn, after).unwrap(),
            ["{\"s\":0}", "{\"u\":1}", "{\"u\":2}"]
        );
    }

    #[test]
    fn a_compact_request_splits_and_joins_back_exactly() {
        let request = r#"{"model":"lc","messages":[{"role":"system","content":"s"},{"role":"user","content":"[a, b] \"messages\":[]"}],"config":{"temperature":1.0},"seed":7}"#;
        let s = split(request).expect("splits");
        assert_eq!(
            s.params,
            r#"{"model":"lc","messages":[],"config":{"temperature":1.0},"seed":7}"#
        );
        assert_eq!(s.messages.len(), 2);
        assert_eq!(
            join(&s.params, s.messages_at, &s.messages).as_deref(),
            Some(request)
        );
        // space around the array is kept in the parameters
        let spaced = r#"{"model":"lc", "messages": [{"role":"user","content":"x"}] }"#;
        let s = split(spaced).expect("splits");
        assert_eq!(
            join(&s.params, s.messages_at, &s.messages).as_deref(),
            Some(spaced)
        );
        let empty = split(r#"{"messages":[],"seed":null}"#).expect("splits");
        assert!(empty.messages.is_empty());
    }

    #[test]
    fn requests_that_do_not_split_exactly_are_kept_whole() {
        for request in [
            r#"{"model":"lc","messages":[{"role":"user","content":"x"}, {"role":"user","content":"y"}]}"#,
            r#"{"model":"lc","messages":[{"role":"user","content":"x"} ]}"#,
            r#"{"model":"lc","messages":[1,2],"messages":[3]}"#,
            r#"{"model":"lc"}"#,
            r#"{"messages":{"a":1}}"#,
            r#"[1,2]"#,
            "not json",
        ] {
            assert_eq!(split(request), None, "{request}");
        }
    }

    #[test]
    fn a_split_between_bytes_of_a_character_is_refused() {
        assert_eq!(join("é", 1, &["x"]), None);
    }
}
