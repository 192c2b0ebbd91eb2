#include "kiln/distributed/backend.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>

#include <algorithm>

#include "kiln/aten/native/device_memory.h"
#include "kiln/c10/device_guard.h"
#include "kiln/c10/status_error.h"
#include "kiln/distributed/abort_report.h"
#include "kiln/runtime/thread_pool.h"

namespace kiln::torch_integration::distributed {
namespace {

using Tensors = std::vector<at::Tensor>;
using TensorLists = std::vector<Tensors>;

// Checks that every tensor is on one kiln device, and notes the collective
// for the abort report (abort_report.h).
void check_kiln(const c10d::Backend& backend, const Tensors& tensors, const char* name) {
  note_collective(name, backend.getRank(), backend.getSize(),
                  tensors.empty() ? nullptr : &tensors.front());
  for (const at::Tensor& tensor : tensors) {
    TORCH_CHECK(tensor.device().type() == c10::DeviceType::PrivateUse1,
                "kiln backend: ", name, " expects tensors on a kiln device, got one on ",
                tensor.device(), ". For CPU tensors give each device its backend: "
                "init_process_group(\"cpu:gloo,kiln:kiln\")");
    TORCH_CHECK(tensor.device() == tensors.front().device(), "kiln backend: ", name,
                " expects all tensors on one device, got ", tensors.front().device(), " and ",
                tensor.device());
  }
}

void check_kiln(const c10d::Backend& backend, const TensorLists& lists, const char* name) {
  for (const Tensors& list : lists) check_kiln(backend, list, name);
}

// The collective reads what work already queued on the current stream
// writes: wait for it. (The device is host memory, so the transport then
// reads and writes it directly.)
void order_after_current_stream(const Tensors& tensors) {
  int device = tensors.empty() ? -1 : tensors.front().device().index();
  Stream& stream = current_runtime_stream(device);
  check_status(stream.synchronize());
  // The transport brings its own threads: the stream's worker and Kiln's
  // pool workers, still polling after the launch that wrote these tensors,
  // would take their cores.
  stream.stop_polling();
  ThreadPool::instance().stop_polling();
}

Tensors aliases(const Tensors& tensors) {
  Tensors result;
  result.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) result.push_back(host_alias(tensor));
  return result;
}

TensorLists aliases(const TensorLists& lists) {
  TensorLists result;
  for (const Tensors& list : lists) result.push_back(aliases(list));
  return result;
}

Tensors flatten(const TensorLists& lists) {
  Tensors flat;
  for (const Tensors& list : lists) flat.insert(flat.end(), list.begin(), list.end());
  return flat;
}

// A reduction as the transport runs it: AVG is SUM then a divide by the group
// size, PREMUL_SUM is a multiply then SUM.
struct Reduction {
  c10d::ReduceOp op;
  double premultiply = 1.0;
  bool average = false;
};

Reduction reduction_for(const c10d::ReduceOp& requested, const Tensors& tensors,
                        const char* name) {
  Reduction reduction{requested};
  if (requested.op_ == c10d::ReduceOp::AVG) {
    for (const at::Tensor& tensor : tensors) {
      TORCH_CHECK(tensor.scalar_type() != at::kBool, "kiln backend: ", name,
                  " cannot average bool tensors");
    }
    reduction.op = c10d::ReduceOp(c10d::ReduceOp::SUM);
    reduction.average = true;
  } else if (requested.op_ == c10d::ReduceOp::PREMUL_SUM) {
    auto supplement = c10::static_intrusive_pointer_cast<c10d::PreMulSumSupplement>(
        requested.supplement_);
    TORCH_CHECK(supplement, "kiln backend: ", name, " with PREMUL_SUM needs a factor");
    reduction.premultiply = supplement->tensor_factor.defined()
                                ? supplement->tensor_factor.item<double>()
                                : supplement->double_factor;
    for (const at::Tensor& tensor : tensors) {
      TORCH_CHECK(at::isFloatingType(tensor.scalar_type()), "kiln backend: ", name,
                  " with PREMUL_SUM needs floating-point tensors, got ", tensor.scalar_type());
    }
    reduction.op = c10d::ReduceOp(c10d::ReduceOp::SUM);
  }
  return reduction;
}

void divide_by(const at::Tensor& host, int size) {
  if (at::isIntegralType(host.scalar_type(), /*includeBool=*/false)) {
    host.div_(size, "trunc");
  } else {
    host.div_(size);
  }
}

// PREMUL_SUM's multiply, in place, on tensors the collective overwrites anyway.
void premultiply(const Tensors& host, const Reduction& reduction) {
  if (reduction.premultiply == 1.0) return;
  for (const at::Tensor& tensor : host) tensor.mul_(reduction.premultiply);
}

// AVG's divide of the results, once the transport summed them; nothing for other ops.
KilnWork::Finish average_afterwards(Tensors host_results, const Reduction& reduction, int size) {
  if (!reduction.average) return nullptr;
  return [host_results = std::move(host_results), size] {
    for (const at::Tensor& tensor : host_results) divide_by(tensor, size);
  };
}

// Host copies of `inputs`, each multiplied by `factor`: PREMUL_SUM must not
// change the caller's inputs where the collective does not overwrite them.
Tensors premultiplied_copies(const Tensors& inputs, double factor) {
  Tensors result;
  for (const at::Tensor& input : inputs) {
    at::Tensor copy = host_alias(input).clone(at::MemoryFormat::Contiguous);
    if (factor != 1.0) copy.mul_(factor);  // floating point only (reduction_for checks)
    result.push_back(copy);
  }
  return result;
}

}  // namespace

KilnBackend::KilnBackend(int rank, int size, std::chrono::milliseconds timeout,
                         c10::intrusive_ptr<c10d::Backend> transport,
                         std::shared_ptr<SharedMemoryGroup> shared_memory)
    : c10d::Backend(rank, size),
      transport_(std::move(transport)),
      shared_memory_(shared_memory ? std::make_unique<SharedMemoryCollectives>(std::move(shared_memory))
                                   : nullptr),
      timeout_(timeout),
      completer_(std::make_unique<Completer>()) {
  TORCH_CHECK(transport_, "kiln backend: a transport backend is required");
  install_abort_report();
}

void KilnBackend::setTimeout(std::chrono::milliseconds timeout) {
  timeout_ = timeout;
  transport_->setTimeout(timeout);
}

struct KilnBackend::Launch {
  // The KilnWork of a started transport work.
  static c10::intrusive_ptr<c10d::Work> of(const KilnBackend& backend, const char* name,
                                           c10d::OpType type,
                                           std::vector<c10::intrusive_ptr<c10d::Work>> transport,
                                           Tensors outputs, KilnWork::Finish finish = nullptr) {
    return KilnWork::start(*backend.completer_, CollectiveLabel{name, backend.rank_, backend.size_},
                           type,
                           std::move(transport), std::move(outputs), std::move(finish),
                           backend.timeout_);
  }

  // A collective that reads and writes `tensors` in place (broadcast, send,
  // recv): checked, ordered after the current stream, and started by
  // `start(host_aliases)` on the transport.
  template <typename Start>
  static c10::intrusive_ptr<c10d::Work> in_place(const KilnBackend& backend, const char* name,
                                                 c10d::OpType type, Tensors& tensors,
                                                 Start start) {
    check_kiln(backend, tensors, name);
    // For a receive too: work queued earlier may still read the buffer the
    // message lands in.
    order_after_current_stream(tensors);
    Tensors host = aliases(tensors);
    return of(backend, name, type, {start(host)}, tensors);
  }
};

c10::intrusive_ptr<c10d::Work> KilnBackend::broadcast(Tensors& tensors,
                                                      const c10d::BroadcastOptions& opts) {
  if (opts.rootTensor == 0 && through_shared_memory(tensors)) {
    check_kiln(*this, tensors, "broadcast");
    order_after_current_stream(tensors);
    Tensors host = aliases(tensors);
    return ran_in_shared_memory("broadcast", c10d::OpType::BROADCAST, tensors, [&] {
      for (const at::Tensor& tensor : host) {
        shared_memory_->broadcast(tensor, static_cast<int>(opts.rootRank), timeout_for(opts.timeout));
      }
    }, nullptr);
  }
  return Launch::in_place(*this, "broadcast", c10d::OpType::BROADCAST, tensors,
                          [&](Tensors& host) { return transport_->broadcast(host, opts); });
}

bool KilnBackend::through_shared_memory(const Tensors& tensors) const {
  return shared_memory_ != nullptr && std::all_of(tensors.begin(), tensors.end(), [](const at::Tensor& tensor) {
           return SharedMemoryCollectives::supports(tensor.scalar_type());
         });
}

bool KilnBackend::through_shared_memory(const Tensors& tensors, c10d::ReduceOp::RedOpType op) const {
  auto reducible = [op](const at::Tensor& tensor) {
    return SharedMemoryCollectives::supports(tensor.scalar_type(), op);
  };
  return through_shared_memory(tensors) && std::all_of(tensors.begin(), tensors.end(), reducible);
}

std::chrono::milliseconds KilnBackend::timeout_for(std::chrono::milliseconds requested) const {
  return requested == c10d::kUnsetTimeout ? timeout_ : requested;
}

c10::intrusive_ptr<c10d::Work> KilnBackend::ran_in_shared_memory(const char* name, c10d::OpType type,
                                                                 Tensors outputs,
                                                                 const std::function<void()>& run,
                                                                 KilnWork::Finish after) {
  std::exception_ptr failure;
  {
    // Device work for the profiler (runtime/device_trace.h), on the current stream.
    const int device = outputs.empty() ? -1 : outputs.front().device().index();
    device_trace::Timer timer(name, device < 0 ? 0 : device, current_runtime_stream(device).id(),
                              device_trace::Activity::Kind::kCollective);
    try {
      run();
    } catch (...) {
      failure = std::current_exception();
    }
  }
  return finished_here(name, type, std::move(outputs), failure, std::move(after));
}

c10::intrusive_ptr<c10d::Work> KilnBackend::finished_here(const char* name, c10d::OpType type, Tensors outputs,
                                                          std::exception_ptr failure, KilnWork::Finish after) {
  KilnWork::Finish finish = [failure, after = std::move(after)] {
    if (failure) std::rethrow_exception(failure);
    if (after) after();
  };
  auto work = KilnWork::start(*completer_, CollectiveLabel{name, rank_, size_}, type, {}, std::move(outputs),
                              std::move(finish), timeout_);
  // Done already: a DDP comm hook chained on its future need not wait for
  // the completion thread's next pass.
  work->complete_now();
  return work;
}

c10::intrusive_ptr<c10d::Work> KilnBackend::allreduce(Tensors& tensors,
                                                      const c10d::AllreduceOptions& opts) {
  check_kiln(*this, tensors, "all_reduce");
  Reduction reduction = reduction_for(opts.reduceOp, tensors, "all_reduce");
  order_after_current_stream(tensors);
  Tensors host = aliases(tensors);
  premultiply(host, reduction);  // all-reduce overwrites its tensors anyway
  if (through_shared_memory(tensors, reduction.op.op_)) {
    return ran_in_shared_memory("all_reduce", c10d::OpType::ALLREDUCE, tensors, [&] {
      for (const at::Tensor& tensor : host) {
        shared_memory_->all_reduce(tensor, reduction.op.op_, timeout_for(opts.timeout));
      }
    }, average_afterwards(host, reduction, size_));
  }
  c10d::AllreduceOptions transport_opts = opts;
  transport_opts.reduceOp = reduction.op;
  return Launch::of(*this, "all_reduce", c10d::OpType::ALLREDUCE,
                    {transport_->allreduce(host, transport_opts)}, tensors,
                    average_afterwards(host, reduction, size_));
}

c10::intrusive_ptr<c10d::Work> KilnBackend::allreduce_coalesced(
    Tensors& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  check_kiln(*this, tensors, "all_reduce_coalesced");
  Reduction reduction = reduction_for(opts.reduceOp, tensors, "all_reduce_coalesced");
  order_after_current_stream(tensors);
  Tensors host = aliases(tensors);
  premultiply(host, reduction);
  if (through_shared_memory(tensors, reduction.op.op_)) {
    return ran_in_shared_memory("all_reduce_coalesced", c10d::OpType::ALLREDUCE_COALESCED, tensors, [&] {
      for (const at::Tensor& tensor : host) {
        shared_memory_->all_reduce(tensor, reduction.op.op_, timeout_for(opts.timeout));
      }
    }, average_afterwards(host, reduction, size_));
  }
  // One all-reduce per tensor: Gloo's coalesced form needs one dtype for all.
  std::vector<c10::intrusive_ptr<c10d::Work>> transport;
  for (at::Tensor& tensor : host) {
    Tensors one = {tensor};
    c10d::AllreduceOptions transport_opts;
    transport_opts.reduceOp = reduction.op;
    transport_opts.timeout = opts.timeout;
    transport.push_back(transport_->allreduce(one, transport_opts));
  }
  return Launch::of(*this, "all_reduce_coalesced", c10d::OpType::ALLREDUCE_COALESCED,
                    std::move(transport), tensors, average_afterwards(host, reduction, size_));
}

c10::intrusive_ptr<c10d::Work> KilnBackend::reduce(Tensors& tensors,
                                                   const c10d::ReduceOptions& opts) {
  check_kiln(*this, tensors, "reduce");
  Reduction reduction = reduction_for(opts.reduceOp, tensors, "reduce");
  order_after_current_stream(tensors);
  // The transport may use a non-root rank's tensor as scratch; NCCL leaves it
  // alone, and so does Kiln: every rank reduces a host copy, and the root
  // copies the result back.
  Tensors host = aliases(tensors);
  Tensors staged = premultiplied_copies(tensors, reduction.premultiply);
  c10d::ReduceOptions transport_opts = opts;
  transport_opts.reduceOp = reduction.op;
  bool root = opts.rootRank == rank_;
  KilnWork::Finish finish = [host, staged, root, average = reduction.average, size = size_] {
    if (!root) return;
    for (size_t index = 0; index < host.size(); ++index) {
      if (average) divide_by(staged[index], size);
      host[index].copy_(staged[index]);
    }
  };
  return Launch::of(*this, "reduce", c10d::OpType::REDUCE,
                    {transport_->reduce(staged, transport_opts)}, tensors, finish);
}

c10::intrusive_ptr<c10d::Work> KilnBackend::allgather(TensorLists& outputs, Tensors& inputs,
                                                      const c10d::AllgatherOptions& opts) {
  check_kiln(*this, outputs, "all_gather");
  check_kiln(*this, inputs, "all_gather");  // noted last: the input shapes
  order_after_current_stream(inputs);
  TensorLists host_outputs = aliases(outputs);
  Tensors host_inputs = aliases(inputs);
  if (through_shared_memory(inputs) && outputs.size() == inputs.size()) {
    // Gathered into one staging tensor as all_gather_into_tensor does, then
    // copied to the list's tensors.
    return ran_in_shared_memory("all_gather", c10d::OpType::ALLGATHER, flatten(outputs), [&] {
      for (size_t index = 0; index < inputs.size(); ++index) {
        const at::Tensor& input = host_inputs[index];
        const int64_t n = input.numel();
        TORCH_CHECK(static_cast<int>(host_outputs[index].size()) == size_, "all_gather needs ", size_,
                    " output tensors, got ", host_outputs[index].size());
        at::Tensor gathered = at::empty({size_ * n}, input.options());
        shared_memory_->all_gather(gathered, input, timeout_for(opts.timeout));
        for (int rank = 0; rank < size_; ++rank) {
          at::Tensor& output = host_outputs[index][rank];
          TORCH_CHECK(output.numel() == n, "all_gather: output ", rank, " has ", output.numel(),
                      " elements, the input ", n);
          output.copy_(gathered.narrow(0, rank * n, n).view(output.sizes()));
        }
      }
    }, nullptr);
  }
  return Launch::of(*this, "all_gather", c10d::OpType::ALLGATHER,
                    {transport_->allgather(host_outputs, host_inputs, opts)}, flatten(outputs));
}

c10::intrusive_ptr<c10d::Work> KilnBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                            const c10d::AllgatherOptions& opts) {
  check_kiln(*this, {output, input}, "all_gather_into_tensor");
  order_after_current_stream({input});
  at::Tensor host_output = host_alias(output);
  at::Tensor host_input = host_alias(input);
  if (through_shared_memory({input})) {
    return ran_in_shared_memory("all_gather_into_tensor", c10d::OpType::_ALLGATHER_BASE, {output}, [&] {
      shared_memory_->all_gather(host_output, host_input, timeout_for(opts.timeout));
    }, nullptr);
  }
  return Launch::of(*this, "all_gather_into_tensor", c10d::OpType::_ALLGATHER_BASE,
                    {transport_->all_gather_single(host_output, host_input, opts)}, {output});
}

c10::intrusive_ptr<c10d::Work> KilnBackend::allgather_into_tensor_coalesced(
    Tensors& outputs, Tensors& inputs, const c10d::AllgatherOptions& opts) {
  check_kiln(*this, outputs, "all_gather_into_tensor_coalesced");
  check_kiln(*this, inputs, "all_gather_into_tensor_coalesced");
  TORCH_CHECK(outputs.size() == inputs.size(), "kiln backend: all_gather_into_tensor_coalesced "
              "needs one output per input, got ", outputs.size(), " and ", inputs.size());
  order_after_current_stream(inputs);
  if (through_shared_memory(inputs)) {
    Tensors host_outputs = aliases(outputs);
    Tensors host_inputs = aliases(inputs);
    return ran_in_shared_memory("all_gather_into_tensor_coalesced", c10d::OpType::COALESCED, outputs, [&] {
      for (size_t index = 0; index < inputs.size(); ++index) {
        shared_memory_->all_gather(host_outputs[index], host_inputs[index], timeout_for(opts.timeout));
      }
    }, nullptr);
  }
  std::vector<c10::intrusive_ptr<c10d::Work>> transport;
  for (size_t index = 0; index < inputs.size(); ++index) {
    at::Tensor host_output = host_alias(outputs[index]);
    at::Tensor host_input = host_alias(inputs[index]);
    transport.push_back(transport_->all_gather_single(host_output, host_input, opts));
  }
  return Launch::of(*this, "all_gather_into_tensor_coalesced", c10d::OpType::COALESCED,
                    std::move(transport), outputs);
}

c10::intrusive_ptr<c10d::Work> KilnBackend::gather(TensorLists& outputs, Tensors& inputs,
                                                   const c10d::GatherOptions& opts) {
  check_kiln(*this, outputs, "gather");
  check_kiln(*this, inputs, "gather");  // noted last: the input shapes
  order_after_current_stream(inputs);
  TensorLists host_outputs = aliases(outputs);
  Tensors host_inputs = aliases(inputs);
  return Launch::of(*this, "gather", c10d::OpType::GATHER,
                    {transport_->gather(host_outputs, host_inputs, opts)}, flatten(outputs));
}

c10::intrusive_ptr<c10d::Work> KilnBackend::scatter(Tensors& outputs, TensorLists& inputs,
                                                    const c10d::ScatterOptions& opts) {
  check_kiln(*this, outputs, "scatter");
  check_kiln(*this, inputs, "scatter");
  Tensors flat_inputs = flatten(inputs);
  order_after_current_stream(flat_inputs.empty() ? outputs : flat_inputs);
  Tensors host_outputs = aliases(outputs);
  TensorLists host_inputs = aliases(inputs);
  return Launch::of(*this, "scatter", c10d::OpType::SCATTER,
                    {transport_->scatter(host_outputs, host_inputs, opts)}, outputs);
}

c10::intrusive_ptr<c10d::Work> KilnBackend::reduce_scatter(Tensors& outputs, TensorLists& inputs,
                                                           const c10d::ReduceScatterOptions& opts) {
  check_kiln(*this, outputs, "reduce_scatter");
  check_kiln(*this, inputs, "reduce_scatter");
  Tensors flat_inputs = flatten(inputs);
  Reduction reduction = reduction_for(opts.reduceOp, flat_inputs, "reduce_scatter");
  order_after_current_stream(flat_inputs);
  Tensors host_outputs = aliases(outputs);
  if (through_shared_memory(flat_inputs, reduction.op.op_) && inputs.size() == outputs.size()) {
    // The list laid end to end (a copy, so PREMUL_SUM multiplies it in
    // place), as reduce_scatter_tensor takes it.
    return ran_in_shared_memory("reduce_scatter", c10d::OpType::REDUCE_SCATTER, outputs, [&] {
      for (size_t index = 0; index < outputs.size(); ++index) {
        Tensors parts;
        for (const at::Tensor& part : inputs[index]) parts.push_back(host_alias(part).reshape({-1}));
        at::Tensor laid_out = at::cat(parts);
        if (reduction.premultiply != 1.0) laid_out.mul_(reduction.premultiply);
        shared_memory_->reduce_scatter(host_outputs[index], laid_out, reduction.op.op_, timeout_for(opts.timeout));
      }
    }, average_afterwards(host_outputs, reduction, size_));
  }
  TensorLists host_inputs;
  for (const Tensors& list : inputs) host_inputs.push_back(premultiplied_copies(list, reduction.premultiply));
  c10d::ReduceScatterOptions transport_opts = opts;
  transport_opts.reduceOp = reduction.op;
  return Launch::of(*this, "reduce_scatter", c10d::OpType::REDUCE_SCATTER,
                    {transport_->reduce_scatter(host_outputs, host_inputs, transport_opts)},
                    outputs, average_afterwards(host_outputs, reduction, size_));
}

c10::intrusive_ptr<c10d::Work> KilnBackend::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  Tensors outputs = {output};
  Tensors inputs = {input};
  return reduce_scatter_tensor_coalesced(outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> KilnBackend::reduce_scatter_tensor_coalesced(
    Tensors& outputs, Tensors& inputs, const c10d::ReduceScatterOptions& opts) {
  check_kiln(*this, outputs, "reduce_scatter_tensor");
  check_kiln(*this, inputs, "reduce_scatter_tensor");
  TORCH_CHECK(outputs.size() == inputs.size(), "kiln backend: reduce_scatter_tensor needs one "
              "output per input, got ", outputs.size(), " and ", inputs.size());
  Reduction reduction = reduction_for(opts.reduceOp, inputs, "reduce_scatter_tensor");
  order_after_current_stream(inputs);
  Tensors host_outputs = aliases(outputs);
  const bool shared = through_shared_memory(inputs, reduction.op.op_);
  // Inputs are only read. PREMUL_SUM multiplies copies; Gloo gets copies in
  // any case (it may use its inputs as scratch); shared memory reads the
  // caller's tensors when there is nothing to multiply.
  Tensors staged = shared && reduction.premultiply == 1.0
                       ? aliases(inputs)
                       : premultiplied_copies(inputs, reduction.premultiply);
  if (shared) {
    return ran_in_shared_memory("reduce_scatter_tensor", c10d::OpType::_REDUCE_SCATTER_BASE, outputs, [&] {
      for (size_t index = 0; index < inputs.size(); ++index) {
        shared_memory_->reduce_scatter(host_outputs[index], staged[index], reduction.op.op_,
                                       timeout_for(opts.timeout));
      }
    }, average_afterwards(host_outputs, reduction, size_));
  }
  c10d::ReduceScatterOptions transport_opts = opts;
  transport_opts.reduceOp = reduction.op;
  std::vector<c10::intrusive_ptr<c10d::Work>> transport;
  for (size_t index = 0; index < inputs.size(); ++index) {
    transport.push_back(
        transport_->reduce_scatter_single(host_outputs[index], staged[index], transport_opts));
  }
  return Launch::of(*this, "reduce_scatter_tensor", c10d::OpType::_REDUCE_SCATTER_BASE,
                    std::move(transport), outputs,
                    average_afterwards(host_outputs, reduction, size_));
}

c10::intrusive_ptr<c10d::Work> KilnBackend::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_split_sizes,
    std::vector<int64_t>& input_split_sizes, const c10d::AllToAllOptions& opts) {
  check_kiln(*this, {output, input}, "all_to_all_single");
  order_after_current_stream({input});
  at::Tensor host_output = host_alias(output);
  at::Tensor host_input = host_alias(input);
  if (through_shared_memory({input, output})) {
    std::exception_ptr failure;
    bool done = true;
    try {
      done = shared_memory_->all_to_all(host_output, host_input, output_split_sizes, input_split_sizes,
                                        timeout_for(opts.timeout));
    } catch (...) {
      failure = std::current_exception();
    }
    if (done) return finished_here("all_to_all_single", c10d::OpType::ALLTOALL_BASE, {output}, failure, nullptr);
    // Some rank's input was larger than its slot: every rank takes Gloo.
  }
  return Launch::of(*this, "all_to_all_single", c10d::OpType::ALLTOALL_BASE,
                    {transport_->all_to_all_single(host_output, host_input, output_split_sizes,
                                                   input_split_sizes, opts)},
                    {output});
}

c10::intrusive_ptr<c10d::Work> KilnBackend::alltoall(Tensors& outputs, Tensors& inputs,
                                                     const c10d::AllToAllOptions& opts) {
  check_kiln(*this, outputs, "all_to_all");
  check_kiln(*this, inputs, "all_to_all");
  order_after_current_stream(inputs);
  Tensors host_outputs = aliases(outputs);
  Tensors host_inputs = aliases(inputs);
  return Launch::of(*this, "all_to_all", c10d::OpType::ALLTOALL,
                    {transport_->alltoall(host_outputs, host_inputs, opts)}, outputs);
}

c10::intrusive_ptr<c10d::Work> KilnBackend::send(Tensors& tensors, int destination, int tag) {
  return Launch::in_place(*this, "send", c10d::OpType::SEND, tensors, [&](Tensors& host) {
    return transport_->send(host, destination, tag);
  });
}

c10::intrusive_ptr<c10d::Work> KilnBackend::recv(Tensors& tensors, int source, int tag) {
  return Launch::in_place(*this, "recv", c10d::OpType::RECV, tensors, [&](Tensors& host) {
    return transport_->recv(host, source, tag);
  });
}

c10::intrusive_ptr<c10d::Work> KilnBackend::recvAnysource(Tensors& tensors, int tag) {
  return Launch::in_place(*this, "recv", c10d::OpType::RECVANYSOURCE, tensors,
                          [&](Tensors& host) { return transport_->recvAnysource(host, tag); });
}

c10::intrusive_ptr<c10d::Work> KilnBackend::barrier(const c10d::BarrierOptions& opts) {
  order_after_current_stream({});
  if (shared_memory_ != nullptr) {
    return ran_in_shared_memory("barrier", c10d::OpType::BARRIER, {},
                                [&] { shared_memory_->barrier(timeout_for(opts.timeout)); }, nullptr);
  }
  return Launch::of(*this, "barrier", c10d::OpType::BARRIER, {transport_->barrier(opts)}, {});
}

}  // namespace kiln::torch_integration::distributed
