//! Full-precision CEnt pipeline: data and schema, black-box models, VAE, latent neighbours,
//! entropy surrogate trees, per-query explanations, atlas export and validation.

pub mod artifacts;
pub mod blackbox;
pub mod data;
pub mod explain;
pub mod layers;
pub mod neighbors;
pub mod quantize;
pub mod surrogate;
pub mod train;
pub mod vae;
pub mod text;
pub mod images;
pub mod metrics;
pub mod baselines;
pub mod evaluate;
pub mod onnx;
