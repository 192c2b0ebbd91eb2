#include "kiln/c10/generator.h"

#include <ATen/core/TensorBody.h>
#include <ATen/ops/empty.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

#include "kiln/c10/status_error.h"

namespace kiln::torch_integration {
namespace {

constexpr size_t kStateBytes = 2 * sizeof(uint64_t);  // seed, offset

}  // namespace

KilnGenerator::KilnGenerator(c10::DeviceIndex device, uint64_t seed)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      seed_(seed) {}

void KilnGenerator::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

uint64_t KilnGenerator::seed() {
  std::random_device source;
  uint64_t seed = (static_cast<uint64_t>(source()) << 32) | source();
  set_current_seed(seed);
  return seed;
}

void KilnGenerator::set_state(const c10::TensorImpl& new_state) {
  TORCH_CHECK(new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>(),
              "kiln generator state must be a torch.uint8 tensor");
  TORCH_CHECK(static_cast<size_t>(new_state.numel()) == kStateBytes,
              "kiln generator state must have ", kStateBytes, " bytes, got ",
              new_state.numel());
  uint64_t values[2];
  std::memcpy(values, new_state.data(), kStateBytes);
  seed_ = values[0];
  offset_ = values[1];
}

c10::intrusive_ptr<c10::TensorImpl> KilnGenerator::get_state() const {
  at::Tensor state = at::empty({static_cast<int64_t>(kStateBytes)}, at::kByte);
  uint64_t values[2] = {seed_, offset_};
  std::memcpy(state.data_ptr(), values, kStateBytes);
  return state.getIntrusivePtr();
}

uint64_t KilnGenerator::reserve_blocks(uint64_t blocks) {
  uint64_t first = offset_;
  offset_ += blocks;
  return first;
}

KilnGenerator* KilnGenerator::clone_impl() const {
  auto* copy = new KilnGenerator(device().index(), seed_);
  copy->offset_ = offset_;
  return copy;
}

const at::Generator& default_generator(c10::DeviceIndex device) {
  static std::once_flag created;
  static std::vector<at::Generator> generators;
  std::call_once(created, [] {
    int count = runtime().device_count();
    for (int index = 0; index < count; ++index) {
      generators.push_back(
          at::make_generator<KilnGenerator>(static_cast<c10::DeviceIndex>(index)));
    }
  });
  return generators[resolve_device_index(device)];
}

at::Generator new_generator(c10::DeviceIndex device) {
  return at::make_generator<KilnGenerator>(
      static_cast<c10::DeviceIndex>(resolve_device_index(device)));
}

}  // namespace kiln::torch_integration
