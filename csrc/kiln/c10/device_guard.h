// DeviceGuardImpl for the kiln device: how PyTorch switches devices, finds and
// switches streams, and records, waits for and times events on kiln.
//
// Part of the c10 layer (above the torch line): a thin adapter over the
// Runtime (runtime/runtime.h), registered for PrivateUse1 at static
// initialization (C10_REGISTER_GUARD_IMPL); c10 keeps that instance for the
// process.
//
// c10::Stream ids map one-to-one to runtime stream ids (0 is the default
// stream, 1..8 the pool). The runtime owns every Stream and never destroys
// one, so a Stream& or the native handle (a kiln::Stream*) handed out stays
// valid for the process. c10 event handles are kiln::Event objects owned by
// the c10 event (torch.Event, c10::Event): created with new on the first
// record, deleted by destroyEvent; a destroyed event's marker still queued
// on a stream keeps its own state alive (runtime/event.h).
//
// Thread-safety: every method may be called from any thread. The current
// device and each device's current stream are per-thread (thread_local in the
// runtime), as in CUDA.
//
// Errors: a bad device index, a stream of another device type or an unknown
// stream id throws c10::Error (RuntimeError); a failed Status is thrown
// through check_status() (status_error.h). Methods marked noexcept never
// throw.
#pragma once

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "kiln/runtime/stream.h"

namespace kiln::torch_integration {

// The runtime stream behind a c10::Stream of the kiln device; throws for a
// stream of another device type, a bad device index or an unknown id.
Stream& runtime_stream(const c10::Stream& stream);
// The c10::Stream naming a runtime stream. Never fails.
c10::Stream to_c10_stream(const Stream& stream);
// The calling thread's current stream of `device` (its current device when
// negative). The index is not checked: pass a kiln tensor's device or -1
// after the device was validated.
Stream& current_runtime_stream(int device = -1);

class DeviceGuardImpl final : public c10::impl::DeviceGuardImplInterface {
 public:
  c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }
  // Devices. setDevice() and exchangeDevice() check the index (no index
  // means 0); uncheckedSetDevice() swallows every error and leaves the device
  // as it was (guards call it from destructors). deviceCount() reads the
  // configuration and does not create the runtime.
  c10::Device exchangeDevice(c10::Device device) const override;
  c10::Device getDevice() const override;
  void setDevice(c10::Device device) const override;
  void uncheckedSetDevice(c10::Device device) const noexcept override;
  c10::DeviceIndex deviceCount() const noexcept override;
  c10::DeviceCapability getDeviceCapability(c10::Device device) const override;
  // Blocks until every stream of the device (current device when -1) has
  // run its queue. Each stream's pending failure is cleared; the first one
  // found is thrown, and those of later streams are dropped.
  void synchronizeDevice(c10::DeviceIndex device_index) const override;

  // Streams. getStreamFromGlobalPool() and getNewStream() return the next
  // pool stream round-robin (priorities are ignored; no stream is created).
  // exchangeStream() sets the calling thread's current stream of that
  // stream's device. queryStream() does not block; synchronizeStream()
  // blocks until the stream's queue has run and throws (and clears) its
  // first failure since the last synchronize.
  c10::Stream getStream(c10::Device device) const override;
  c10::Stream getDefaultStream(c10::Device device) const override;
  c10::Stream getStreamFromGlobalPool(c10::Device device, bool high_priority) const override;
  c10::Stream getNewStream(c10::Device device, int priority) const override;
  c10::Stream exchangeStream(c10::Stream stream) const override;
  void* getStreamNativeHandle(const c10::Stream stream) const override;
  bool queryStream(const c10::Stream& stream) const override;
  void synchronizeStream(const c10::Stream& stream) const override;
  bool isStreamCapturing(const c10::Stream& stream) const override { return false; }
  // Once kiln memory `data` is freed, keeps it from reuse until the work
  // queued on `stream` up to that free has run (the caching allocator's
  // record_stream); no-op for other memory. Returns at once.
  void recordDataPtrOnStream(const c10::DataPtr& data, const c10::Stream& stream) const override;

  // Events. record() enqueues a marker without waiting for queue room and
  // returns; it creates the Event on first use (timing enabled for
  // BACKEND_DEFAULT, which torch.Event(enable_timing=True) asks for); it
  // throws if `device_index` is not the stream's, or (KILN_LAUNCH_BLOCKING)
  // for an earlier failure pending on the stream. block() enqueues a wait
  // on `stream` and returns: the stream's worker waits for the event's last
  // record. queryEvent() does not block. synchronizeEvent() blocks the
  // calling thread until the marker ran; it reports no failure (one of the
  // work before the marker stays with its stream, for the next
  // synchronize). A never-recorded (null) event counts as complete.
  // elapsedTime() does not wait: both events must have timing and have
  // completed, else RuntimeError (kFailedPrecondition).
  void record(void** event, const c10::Stream& stream, c10::DeviceIndex device_index,
              c10::EventFlag flag) const override;
  void block(void* event, const c10::Stream& stream) const override;
  bool queryEvent(void* event) const override;
  void synchronizeEvent(void* event) const override;
  double elapsedTime(void* start, void* end, c10::DeviceIndex device_index) const override;
  void destroyEvent(void* event, c10::DeviceIndex device_index) const noexcept override;
};

}  // namespace kiln::torch_integration
