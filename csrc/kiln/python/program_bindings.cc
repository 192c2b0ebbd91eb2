// torch_kiln._C._Program: the compiled path's bindings. Converts the graph
// description python/torch_kiln/compile/lowering/graph_lowering.py builds from an FX graph into
// a ProgramDescription (IR graph, extern call stacks) and exposes Program.
// torch::jit::toIValue (pybind_utils.h) converts the Python arguments of an
// extern call with PyTorch's own rules; its header needs the full operator
// list, which the rest of Kiln keeps out with this macro.
#undef TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include "kiln/python/program_bindings.h"

#include <ATen/ScalarOps.h>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/csrc/utils/pybind.h>

#include "kiln/aten/program/program.h"
#include "kiln/aten/program/program_function.h"
#include "kiln/base/status.h"

namespace kiln::torch_integration {
namespace {

namespace py = pybind11;

// A Python number where the schema takes a tensor (`x * 2` in a graph whose
// mul Kiln calls): ATen's argument parser makes it a wrapped-number tensor,
// a CPU scalar that type promotion treats as a Python number.
bool is_number_for_a_tensor(const py::handle& value, const c10::TypePtr& type) {
  const bool tensor_type = type->kind() == c10::TypeKind::TensorType ||
                           (type->kind() == c10::TypeKind::OptionalType &&
                            type->castRaw<c10::OptionalType>()->getElementType()->kind() == c10::TypeKind::TensorType);
  return tensor_type && (PyBool_Check(value.ptr()) || PyLong_Check(value.ptr()) || PyFloat_Check(value.ptr()) ||
                         PyComplex_Check(value.ptr()));
}

at::Tensor wrapped_number(const py::handle& value) {
  c10::Scalar scalar;
  if (PyBool_Check(value.ptr())) {
    scalar = value.cast<bool>();
  } else if (PyLong_Check(value.ptr())) {
    scalar = value.cast<int64_t>();
  } else if (PyFloat_Check(value.ptr())) {
    scalar = value.cast<double>();
  } else {
    scalar = c10::complex<double>(value.cast<std::complex<double>>());
  }
  at::Tensor tensor = at::scalar_to_tensor(scalar);
  tensor.unsafeGetTensorImpl()->set_wrapped_number(true);
  return tensor;
}
using program::ExternCall;
using program::Program;
using program::ProgramDescription;
using program::ProgramFunctionSpec;
using program::TangentLayout;

ir::DType dtype_named(const std::string& name) {
  std::optional<ir::DType> dtype = ir::dtype_from_name(name);
  TORCH_CHECK(dtype.has_value(), "kiln: unknown IR dtype '", name, "'");
  return *dtype;
}

// A fragment from its Python form: a list of tuples, ("load", k),
// ("constant", value, dtype), ("cast", operand, dtype), ("accumulator",) or
// (opcode name, operands...).
std::vector<ir::Node> fragment_from(const py::list& entries) {
  std::vector<ir::Node> fragment;
  for (const py::handle& handle : entries) {
    py::tuple entry = py::reinterpret_borrow<py::tuple>(handle);
    const std::string name = entry[0].cast<std::string>();
    ir::Node node;
    std::optional<ir::OpCode> code = ir::opcode_from_name(name);
    TORCH_CHECK(code.has_value(), "kiln: unknown IR op '", name, "'");
    node.op = *code;
    if (node.op == ir::OpCode::kLoad) {
      node.integer = entry[1].cast<int64_t>();
    } else if (node.op == ir::OpCode::kConstant) {
      node.dtype = dtype_named(entry[2].cast<std::string>());
      if (ir::is_integer(node.dtype)) {
        node.integer = entry[1].cast<int64_t>();
        node.real = static_cast<double>(node.integer);
      } else {
        node.real = entry[1].cast<double>();
      }
    } else if (node.op == ir::OpCode::kCast) {
      node.args[0] = entry[1].cast<int>();
      node.dtype = dtype_named(entry[2].cast<std::string>());
    } else {
      for (size_t a = 1; a < entry.size(); ++a) node.args[a - 1] = entry[a].cast<int>();
    }
    fragment.push_back(node);
  }
  return fragment;
}

std::vector<ir::GraphValueId> ids_from(const py::handle& list) {
  std::vector<ir::GraphValueId> ids;
  for (const py::handle& item : list) ids.push_back(item.is_none() ? ir::kNoValue : item.cast<int>());
  return ids;
}

ExternCall extern_call_from(const py::dict& node) {
  ExternCall call;
  call.label = node["label"].cast<std::string>();
  call.source_line = node["source_line"].cast<std::string>();
  call.op = c10::Dispatcher::singleton().findSchemaOrThrow(node["name"].cast<std::string>().c_str(),
                                                           node["overload"].cast<std::string>().c_str());
  const c10::FunctionSchema& schema = call.op->schema();
  py::list arguments = node["arguments"];
  TORCH_CHECK(arguments.size() == schema.arguments().size(), "kiln: ", call.label, " takes ",
              schema.arguments().size(), " arguments, the graph gives ", arguments.size());
  std::vector<bool> is_tensor(arguments.size(), false);
  for (const py::handle& handle : py::list(node["tensor_arguments"])) {
    py::tuple entry = py::reinterpret_borrow<py::tuple>(handle);
    ExternCall::TensorArgument argument;
    argument.position = entry[0].cast<int>();
    const std::string kind = entry[1].cast<std::string>();
    argument.kind = kind == "single" ? ExternCall::TensorArgument::Kind::kSingle
                    : kind == "list" ? ExternCall::TensorArgument::Kind::kList
                                     : ExternCall::TensorArgument::Kind::kOptionalList;
    argument.values = ids_from(entry[2]);
    is_tensor.at(argument.position) = true;
    call.tensor_arguments.push_back(std::move(argument));
  }
  for (size_t i = 0; i < arguments.size(); ++i) {
    const c10::TypePtr& type = schema.arguments()[i].type();
    if (is_tensor[i]) {
      call.arguments.emplace_back();
    } else if (is_number_for_a_tensor(arguments[i], type)) {
      call.arguments.emplace_back(wrapped_number(arguments[i]));
    } else {
      call.arguments.push_back(torch::jit::toIValue(arguments[i], type));
    }
  }
  call.choose_direct();
  if (!node["static_view"].is_none()) {
    py::tuple layouts = node["static_view"];
    auto layout_from = [](const py::handle& handle) {
      py::tuple layout = py::reinterpret_borrow<py::tuple>(handle);
      return ExternCall::Layout{layout[0].cast<std::vector<int64_t>>(), layout[1].cast<std::vector<int64_t>>(),
                                layout[2].cast<int64_t>()};
    };
    call.static_view = ExternCall::StaticView{layout_from(layouts[0]), layout_from(layouts[1])};
  }
  for (const py::handle& handle : py::list(node["results"])) {
    py::tuple entry = py::reinterpret_borrow<py::tuple>(handle);
    call.results.push_back({entry[0].cast<int>(), entry[1].cast<int>(), entry[2].cast<int>()});
  }
  return call;
}

ProgramDescription description_from(const py::dict& description) {
  ProgramDescription result;
  ir::Graph& graph = result.graph;
  for (const py::handle& handle : py::list(description["values"])) {
    py::tuple value = py::reinterpret_borrow<py::tuple>(handle);
    graph.values.push_back({dtype_named(value[0].cast<std::string>()), value[1].cast<std::vector<int64_t>>()});
    result.strides.push_back(value[2].is_none() ? std::vector<int64_t>() : value[2].cast<std::vector<int64_t>>());
  }
  graph.inputs = ids_from(description["inputs"]);
  graph.outputs = ids_from(description["outputs"]);
  result.device_index = description["device_index"].cast<int>();
  if (description.contains("run_inline")) result.run_inline = description["run_inline"].cast<bool>();
  if (description.contains("mutated_inputs")) {
    result.mutated_inputs = description["mutated_inputs"].cast<std::vector<int>>();
  }
  if (description.contains("output_into_input")) {
    for (const py::handle& handle : py::list(description["output_into_input"])) {
      py::tuple pair = py::reinterpret_borrow<py::tuple>(handle);
      result.output_into_input.emplace_back(pair[0].cast<int>(), pair[1].cast<int>());
    }
  }
  for (const py::handle& handle : py::list(description["nodes"])) {
    py::dict node = py::reinterpret_borrow<py::dict>(handle);
    ir::GraphNode graph_node;
    const std::string kind = node["kind"].cast<std::string>();
    graph_node.label = node["label"].cast<std::string>();
    graph_node.inputs = ids_from(node["inputs"]);
    graph_node.outputs = ids_from(node["outputs"]);
    if (kind == "extern") {
      graph_node.kind = ir::GraphNodeKind::kExtern;
      graph_node.aliases_input = node["aliases_input"].cast<bool>();
      graph_node.has_side_effects = node["has_side_effects"].cast<bool>();
      graph_node.call = static_cast<int32_t>(result.calls.size());
      result.calls.push_back(extern_call_from(node));
    } else {
      graph_node.kind = kind == "reduction" ? ir::GraphNodeKind::kReduction : ir::GraphNodeKind::kPointwise;
      graph_node.expression = fragment_from(node["expression"]);
      if (graph_node.kind == ir::GraphNodeKind::kReduction) {
        const std::string op = node["reduce_op"].cast<std::string>();
        bool found = false;
        for (int code = 0; code <= static_cast<int>(ir::ReduceOp::kAll); ++code) {
          if (op == ir::reduce_op_name(static_cast<ir::ReduceOp>(code))) {
            graph_node.reduce_op = static_cast<ir::ReduceOp>(code);
            found = true;
          }
        }
        TORCH_CHECK(found, "kiln: unknown reduction '", op, "'");
        graph_node.reduced_dims = node["reduced_dims"].cast<std::vector<int>>();
        graph_node.epilogue = fragment_from(node["epilogue"]);
      }
    }
    graph.nodes.push_back(std::move(graph_node));
  }
  return result;
}

py::dict statistics_of(const Program& compiled) {
  const program::ProgramStatistics& statistics = compiled.statistics();
  py::dict result;
  result["nodes"] = statistics.nodes;
  result["removed_nodes"] = statistics.removed_nodes;
  result["kernels"] = statistics.kernels;
  result["fused_nodes"] = statistics.fused_nodes;
  result["extern_calls"] = statistics.extern_calls;
  result["stored_values"] = statistics.stored_values;
  result["unstored_values"] = statistics.unstored_values;
  result["arena_bytes"] = statistics.arena_bytes;
  result["planned_bytes"] = statistics.planned_bytes;
  return result;
}

c10::MemoryFormat memory_format_named(const std::string& name) {
  if (name == "contiguous_format") return c10::MemoryFormat::Contiguous;
  if (name == "channels_last") return c10::MemoryFormat::ChannelsLast;
  if (name == "channels_last_3d") return c10::MemoryFormat::ChannelsLast3d;
  TORCH_CHECK(false, "kiln: unexpected tangent memory format '", name, "'");
}

// A ProgramFunctionSpec from the dict python/torch_kiln/compile/runtime/program_function.py
// builds (its keys are the spec's field names; an inference graph's has no
// backward and none of the fields after it).
c10::intrusive_ptr<ProgramFunctionSpec> program_function_spec_from(const py::dict& description) {
  auto spec = c10::make_intrusive<ProgramFunctionSpec>();
  spec->forward = description["forward"].cast<std::shared_ptr<Program>>();
  spec->forward_positions = description["forward_positions"].cast<std::vector<int>>();
  spec->forward_constants = description["forward_constants"].cast<std::vector<at::Tensor>>();
  spec->forward_results = description["forward_results"].cast<std::vector<int>>();
  spec->mutated_arguments = description["mutated_arguments"].cast<std::vector<int>>();
  spec->outputs = description["outputs"].cast<int>();
  const int graph_outputs = static_cast<int>(spec->forward_results.size());
  TORCH_CHECK(spec->outputs <= graph_outputs, "kiln: inconsistent compiled program description");
  if (!description.contains("backward")) return spec;  // an inference graph
  spec->backward = description["backward"].cast<std::shared_ptr<Program>>();
  std::tie(spec->checked_begin, spec->checked_end) = description["checked"].cast<std::pair<int, int>>();
  std::tie(spec->unchecked_begin, spec->unchecked_end) = description["unchecked"].cast<std::pair<int, int>>();
  spec->saved_is_graph_input = description["saved_is_graph_input"].cast<std::vector<bool>>();
  spec->non_differentiable = description["non_differentiable"].cast<std::vector<int>>();
  spec->tangent_outputs = description["tangent_outputs"].cast<std::vector<int>>();
  for (const py::handle& handle : description["tangent_layouts"].cast<py::list>()) {
    py::tuple entry = py::reinterpret_borrow<py::tuple>(handle);
    TangentLayout layout;
    if (!entry[0].is_none()) layout.memory_format = memory_format_named(entry[0].cast<std::string>());
    layout.sizes = entry[1].cast<std::vector<int64_t>>();
    layout.strides = entry[2].cast<std::vector<int64_t>>();
    spec->tangent_layouts.push_back(std::move(layout));
  }
  spec->backward_positions = description["backward_positions"].cast<std::vector<int>>();
  spec->backward_constants = description["backward_constants"].cast<std::vector<at::Tensor>>();
  spec->gradient_results = description["gradient_results"].cast<std::vector<int>>();
  spec->compiled_nondeterministic = description["compiled_nondeterministic"].cast<bool>();
  const size_t saved = static_cast<size_t>(spec->checked_end - spec->checked_begin + spec->unchecked_end -
                                           spec->unchecked_begin);
  TORCH_CHECK(spec->checked_end <= graph_outputs && spec->unchecked_end <= graph_outputs &&
                  spec->saved_is_graph_input.size() == saved &&
                  spec->tangent_outputs.size() == spec->tangent_layouts.size(),
              "kiln: inconsistent compiled program description");
  return spec;
}

// The Python handle of a spec: called with the graph's inputs, returns its outputs.
struct ProgramFunctionHandle {
  c10::intrusive_ptr<ProgramFunctionSpec> spec;
};

}  // namespace

void bind_program(py::module& module) {
  py::class_<Program, std::shared_ptr<Program>>(module, "_Program")
      .def(py::init([](const py::dict& description) {
        return std::make_shared<Program>(description_from(description));
      }))
      // Without the GIL: a run may wait for the stream (an op on the
      // synchronous library path, library_call.cc), and the stream's worker
      // needs the GIL when it drops the last reference to a tensor that has a
      // Python object. Holding it while waiting deadlocked.
      .def("run", &Program::run, py::call_guard<py::gil_scoped_release>())
      .def("statistics", &statistics_of)
      .def("input_graph_text", &Program::input_graph_text)
      .def("graph_text", &Program::graph_text)
      .def("fusion_text", &Program::fusion_text);
  py::class_<ProgramFunctionHandle>(module, "_ProgramFunction")
      .def(py::init([](const py::dict& description) {
        return ProgramFunctionHandle{program_function_spec_from(description)};
      }))
      // Without the GIL, as Program.run: the programs may wait for the stream.
      .def("__call__",
           [](const ProgramFunctionHandle& handle, const std::vector<at::Tensor>& arguments) {
             return program::run_program_function(handle.spec, arguments);
           },
           py::call_guard<py::gil_scoped_release>());
}

}  // namespace kiln::torch_integration
