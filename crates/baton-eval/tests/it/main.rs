//! LiC conformance: every vector in `../shared/conformance` must get LiC's verdict
//! through the same `Evaluators` registry that runs use.

mod conformance;
