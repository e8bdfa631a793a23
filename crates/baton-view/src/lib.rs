//! A transcript viewer for baton stores: one static site that shows every episode.
//!
//! An aggregate table says a cell scored 0.41; a researcher then wants to read the
//! episodes behind it. This crate reads a store (either study) and writes a folder that
//! any browser opens with no server: `index.html`, the viewer, and `data/`, the episodes
//! as JavaScript files loaded on demand (a `<script>` tag loads from `file://`, where a
//! `fetch` would be refused). Per episode it shows the system prompt, each user turn and
//! reply with the model that wrote it, the switch with both models' names and the
//! interface, the handoff call (a compaction summary) where there is one, the final
//! answer as extracted with the rule that fired, the verdict, and per call the tokens
//! (cache classes included), cost, latency and attempts. Agent episodes show each
//! command with its exit status and observation, and the final patch.
//!
//! What it is not: a report. The figures (QRec, CSRet, intervals) are `baton-report`'s;
//! this crate only lays out what the store holds, and reads nothing but the store.
//!
//! **Scale.** The episode list is written in chunks of [`LIST_CHUNK`] rows and the
//! transcripts in chunks of [`EPISODE_CHUNK`] episodes, so a 100,000-episode store opens
//! by loading its list (about 150 bytes an episode) and one transcript chunk per episode
//! opened; the list is filtered and paged in the browser.
//!
//! **Hostile text.** Replies are shown through `textContent`, never parsed as HTML, and
//! each text is cut at [`TEXT_CAP`] characters with the number left out said.
//!
//! The main entry is [`write_site`]; its result is a [`SiteSummary`].
#![deny(missing_docs)]

mod error;
mod site;
mod transcript;

pub use error::ViewError;
pub use site::{EPISODE_CHUNK, LIST_CHUNK, SiteSummary, write_site};
pub use transcript::TEXT_CAP;
