//! A Python object with `predict_proba` behind the library's [`BlackBox`].
//!
//! The model sees what cent's own classifiers see: the schema's encoded rows, a 2-D `float64`
//! numpy array of shape `(rows, encoded columns)` in [`Encoding::column_names`] order. One call
//! per batch the explainer asks for; the GIL is taken for that call only (the explainer runs
//! with it released), and whatever the call raises or returns that is not `(rows, classes)`
//! finite probabilities becomes a [`ModelError`], never a panic.
//!
//! [`Encoding::column_names`]: cent_host::data::Encoding::column_names

use cent_host::blackbox::{BlackBox, ModelError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

/// A Python classifier: any object whose `predict_proba(X)` returns class probabilities.
#[derive(Debug)]
pub struct PyModel {
    object: Py<PyAny>,
    /// How the model is named in messages: its type's name.
    name: String,
    inputs: usize,
    classes: usize,
}

impl PyModel {
    /// Wraps `object`, which must have a callable `predict_proba`.
    ///
    /// # Errors
    /// A message naming the object's type when it has no `predict_proba`.
    pub fn new(object: &Bound<'_, PyAny>, inputs: usize, classes: usize) -> Result<PyModel, String> {
        let name = object.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "object".to_string());
        let callable = object.getattr("predict_proba").map(|f| f.is_callable()).unwrap_or(false);
        if !callable {
            return Err(format!(
                "the model {name} has no predict_proba method (give \"mlp\", \"lr\", an .onnx file or an object with predict_proba)"
            ));
        }
        Ok(PyModel { object: object.clone().unbind(), name, inputs, classes })
    }

    /// `predict_proba` on `n` rows, holding the GIL; the probabilities row-major.
    fn call(&self, py: Python<'_>, rows: &[f32], n: usize) -> Result<Vec<f32>, String> {
        let fail = |e: PyErr| e.to_string();
        let numpy = py.import("numpy").map_err(fail)?;
        let mut bytes = Vec::with_capacity(rows.len() * 8);
        for &v in rows {
            bytes.extend_from_slice(&f64::from(v).to_ne_bytes());
        }
        let x = numpy
            .call_method1("frombuffer", (PyBytes::new(py, &bytes), "float64"))
            .and_then(|a| a.call_method1("reshape", (n, self.inputs)))
            .map_err(fail)?;
        let p = self.object.bind(py).call_method1("predict_proba", (x,)).map_err(fail)?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("dtype", "float32").map_err(fail)?;
        let p = numpy
            .call_method("ascontiguousarray", (p,), Some(&kwargs))
            .map_err(|e| format!("predict_proba did not return an array of numbers: {e}"))?;
        let shape: Vec<usize> = p.getattr("shape").and_then(|s| s.extract()).map_err(fail)?;
        if shape != [n, self.classes] {
            return Err(format!(
                "predict_proba returned an array of shape {shape:?}, expected [{n}, {}] (rows, classes)",
                self.classes
            ));
        }
        let raw = p.call_method0("tobytes").map_err(fail)?;
        let raw = raw.cast::<PyBytes>().map_err(|e| e.to_string())?.as_bytes();
        Ok(raw.chunks_exact(4).map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]])).collect())
    }
}

impl BlackBox for PyModel {
    fn classes(&self) -> usize {
        self.classes
    }

    fn inputs(&self) -> usize {
        self.inputs
    }

    fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, ModelError> {
        let n = rows.len() / self.inputs.max(1);
        Python::attach(|py| self.call(py, rows, n)).map_err(|message| ModelError::Failed {
            model: self.name.clone(),
            rows: n,
            message,
        })
    }
}
