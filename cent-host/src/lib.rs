//! Full-precision CEnt pipeline: data and schema, black-box models, VAE, latent neighbours,
//! entropy surrogate trees, per-query explanations, atlas export and validation.

pub mod layers;
pub mod data;
pub mod blackbox;
pub mod train;
pub mod vae;
pub mod quantize;
