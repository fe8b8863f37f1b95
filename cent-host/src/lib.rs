//! Full-precision CEnt pipeline: data and schema, black-box models, VAE, latent neighbours,
//! entropy surrogate trees, per-query explanations, atlas export and validation.

pub mod artifacts;
pub mod atlas;
pub mod audit;
pub mod baselines;
pub mod batch;
pub mod blackbox;
pub mod data;
pub mod evaluate;
pub mod explain;
pub mod export;
pub mod images;
pub mod layers;
pub mod metrics;
pub mod neighbors;
pub mod onnx;
pub mod profile;
pub mod quantize;
pub mod support;
pub mod surrogate;
pub mod text;
pub mod train;
pub mod vae;
pub mod validate;
