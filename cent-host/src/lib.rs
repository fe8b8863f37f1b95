//! The CEnt library: data and schema, black-box models, VAE, latent neighbours, entropy
//! surrogate trees, per-query explanations, batches and their audit, atlas export and
//! validation.
//!
//! The `cent` command-line tool (crate `cent-cli`), the evaluation lab (crate `cent-lab`) and
//! language bindings are built on this crate; none of their types appear in its API. Long work
//! reports through [`progress::Progress`]; failures are typed errors per module.

pub mod artifacts;
pub mod atlas;
pub mod audit;
pub mod batch;
pub mod blackbox;
pub mod constraints;
pub mod data;
pub mod distinct;
pub mod encoded;
pub mod explain;
pub mod export;
pub mod layers;
pub mod nearby;
pub mod neighbors;
pub mod onnx;
pub mod people;
pub mod preview;
pub mod profile;
pub mod progress;
pub mod quantize;
pub mod ranking;
pub mod regions;
pub mod results;
pub mod rows;
pub mod support;
pub mod surrogate;
pub mod train;
pub mod vae;
pub mod validate;
