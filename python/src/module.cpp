// llm_oracle._core: the nanobind module over the public C++ API (include/llm_oracle/).
// InputError becomes llm_oracle.InputError, a ValueError subclass carrying
// .file and .field; the GIL is released while the reference computes.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "llm_oracle/errors.h"
#include "llm_oracle/version.h"

namespace nb = nanobind;

NB_MODULE(_core, m) {
  m.doc() = "LLM Oracle: the bit-exact reference as a library (docs/python.md)";
  // class InputError(ValueError) with .file and .field; the translator fills them.
  nb::object input_error = nb::steal(PyErr_NewExceptionWithDoc(
      "llm_oracle.InputError", "Bad input: .file and .field name the culprit (the C++ InputError).",
      PyExc_ValueError, nullptr));
  m.attr("InputError") = input_error;
  nb::register_exception_translator(
      [](const std::exception_ptr& p, void* payload) {
        try {
          std::rethrow_exception(p);
        } catch (const llm_oracle::InputError& e) {
          PyObject* type = static_cast<PyObject*>(payload);
          nb::object err = nb::borrow(type)(nb::str(e.what()));
          err.attr("file") = nb::str(e.file().c_str());
          err.attr("field") = nb::str(e.field().c_str());
          PyErr_SetObject(type, err.ptr());
        }
      },
      input_error.ptr());
  m.def("version", &llm_oracle::version, "The oracle's version (`oracle version`).");
  m.def("numerics_version", &llm_oracle::numerics_version, "The numerics contract version (docs/numerics.md).");
  nb::module_ ops = m.def_submodule("ops", "Single ops on float32 arrays (docs/python.md, ops)");
  llm_oracle::py::bind_ops(ops);
  llm_oracle::py::bind_model(m);
  llm_oracle::py::bind_compare(m);
}
