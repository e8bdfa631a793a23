//! Integration tests of `baton-handover`: the Handover fixtures, structure rules, and
//! verification against throwaway git repositories.

mod bench;
mod hostile;
mod large;
mod reference;
mod structure;
mod support;
mod switch;
mod traps;
mod variants;
mod verify;
