#include "kiln/runtime/event.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "test_util.h"

namespace kiln {
namespace {

using testing_util::busy_work;
using testing_util::Gate;
using testing_util::ready_within;

TEST(Event, NeverRecordedCountsAsComplete) {
  Event event;
  EXPECT_FALSE(event.was_recorded());
  EXPECT_TRUE(event.query());
  event.synchronize();  // returns at once
  EXPECT_FALSE(event.timing_enabled());
  EXPECT_TRUE(Event(true).timing_enabled());
}

TEST(Event, RecordCompletesWhenTheStreamReachesIt) {
  Stream stream(0, 1, false);
  Gate gate;
  Event event;
  ASSERT_TRUE(gate.hold(stream).ok());
  ASSERT_TRUE(event.record(stream).ok());
  EXPECT_TRUE(event.was_recorded());
  EXPECT_FALSE(event.query());  // the stream has not reached the marker
  gate.open();
  event.synchronize();
  EXPECT_TRUE(event.query());
  EXPECT_TRUE(stream.synchronize().ok());
}

TEST(Event, SynchronizeWaitsForTheMarker) {
  Stream stream(0, 1, false);
  Gate gate;
  Event event;
  ASSERT_TRUE(gate.hold(stream).ok());
  ASSERT_TRUE(event.record(stream).ok());
  std::future<void> waiter = std::async(std::launch::async, [&] { event.synchronize(); });
  EXPECT_FALSE(ready_within(waiter, std::chrono::milliseconds(20)));
  gate.open();
  waiter.get();
  EXPECT_TRUE(event.query());
}

TEST(Event, CapturesOnlyWorkQueuedBeforeTheRecord) {
  Stream stream(0, 1, false);
  Gate later;
  Event event;
  ASSERT_TRUE(event.record(stream).ok());
  ASSERT_TRUE(later.hold(stream).ok());  // queued after the record
  event.synchronize();                   // must not wait for `later`
  EXPECT_TRUE(event.query());
  EXPECT_FALSE(stream.query());
  later.open();
  EXPECT_TRUE(stream.synchronize().ok());
}

TEST(Event, QueryFollowsTheLatestRecord) {
  Stream stream(0, 1, false);
  Event event;
  ASSERT_TRUE(event.record(stream).ok());
  event.synchronize();
  EXPECT_TRUE(event.query());
  Gate gate;
  ASSERT_TRUE(gate.hold(stream).ok());
  ASSERT_TRUE(event.record(stream).ok());
  EXPECT_FALSE(event.query());  // the second record is pending
  gate.open();
  event.synchronize();
  EXPECT_TRUE(event.query());
}

TEST(Event, BlockOrdersAnotherStreamAfterTheRecordedWork) {
  Stream a(0, 1, false);
  Stream b(0, 2, false);
  Gate gate;
  std::atomic<bool> a_done{false};
  ASSERT_TRUE(gate.hold(a).ok());
  ASSERT_TRUE(a.enqueue("test::a_work", [&] {
    a_done = true;
    return Status();
  }).ok());
  Event event;
  ASSERT_TRUE(event.record(a).ok());
  ASSERT_TRUE(event.block(b).ok());

  std::promise<bool> observed;
  std::future<bool> observed_future = observed.get_future();
  ASSERT_TRUE(b.enqueue("test::b_work", [&] {
    observed.set_value(a_done.load());
    return Status();
  }).ok());
  // While A is held, B must not get to its item.
  EXPECT_FALSE(ready_within(observed_future, std::chrono::milliseconds(30)));
  EXPECT_FALSE(b.query());
  gate.open();
  EXPECT_TRUE(observed_future.get()) << "B ran before A's work";
  EXPECT_TRUE(b.synchronize().ok());
  EXPECT_TRUE(a.synchronize().ok());
}

TEST(Event, BlockDoesNotHoldWorkQueuedBeforeIt) {
  Stream a(0, 1, false);
  Stream b(0, 2, false);
  Gate gate;
  ASSERT_TRUE(gate.hold(a).ok());
  Event event;
  ASSERT_TRUE(event.record(a).ok());
  std::promise<void> before;
  std::future<void> before_future = before.get_future();
  ASSERT_TRUE(b.enqueue("test::before_block", [&] {
    before.set_value();
    return Status();
  }).ok());
  ASSERT_TRUE(event.block(b).ok());
  before_future.get();  // runs although A is held
  gate.open();
  EXPECT_TRUE(b.synchronize().ok());
}

TEST(Event, BlockOnAnUnrecordedOrCompletedEventIsANoOp) {
  Stream a(0, 1, false);
  Stream b(0, 2, false);
  Event unrecorded;
  ASSERT_TRUE(unrecorded.block(b).ok());
  EXPECT_TRUE(b.query());  // nothing was queued
  ASSERT_TRUE(b.synchronize().ok());

  Event done;
  ASSERT_TRUE(done.record(a).ok());
  done.synchronize();
  ASSERT_TRUE(done.block(b).ok());
  EXPECT_TRUE(b.query());
  ASSERT_TRUE(b.synchronize().ok());
}

TEST(Event, ElapsedTimeAroundRealWork) {
  Stream stream(0, 1, false);
  Event start(true);
  Event end(true);
  ASSERT_TRUE(start.record(stream).ok());
  ASSERT_TRUE(stream.enqueue("test::busy", [] {
    busy_work(std::chrono::milliseconds(5));
    return Status();
  }).ok());
  ASSERT_TRUE(end.record(stream).ok());
  end.synchronize();
  StatusOr<double> elapsed = start.elapsed_milliseconds(end);
  ASSERT_TRUE(elapsed.ok()) << elapsed.status().message();
  EXPECT_GE(elapsed.value(), 4.5);
  EXPECT_LT(elapsed.value(), 5000.0);
  // Reversed order gives a negative duration, as in CUDA.
  StatusOr<double> reversed = end.elapsed_milliseconds(start);
  ASSERT_TRUE(reversed.ok());
  EXPECT_DOUBLE_EQ(reversed.value(), -elapsed.value());
}

TEST(Event, ElapsedTimeNeedsTimingOnBothEvents) {
  Stream stream(0, 1, false);
  Event timed(true);
  Event untimed(false);
  ASSERT_TRUE(timed.record(stream).ok());
  ASSERT_TRUE(untimed.record(stream).ok());
  ASSERT_TRUE(stream.synchronize().ok());
  StatusOr<double> first = timed.elapsed_milliseconds(untimed);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(first.status().message().find("enable_timing"), std::string::npos);
  EXPECT_FALSE(untimed.elapsed_milliseconds(timed).ok());
}

TEST(Event, ElapsedTimeNeedsCompletedRecords) {
  Stream stream(0, 1, false);
  Event start(true);
  Event end(true);
  EXPECT_EQ(start.elapsed_milliseconds(end).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(start.record(stream).ok());
  ASSERT_TRUE(stream.synchronize().ok());
  // The end event was never recorded.
  StatusOr<double> unrecorded = start.elapsed_milliseconds(end);
  ASSERT_FALSE(unrecorded.ok());
  EXPECT_NE(unrecorded.status().message().find("end event"), std::string::npos);
  // Recorded but not yet reached.
  Gate gate;
  ASSERT_TRUE(gate.hold(stream).ok());
  ASSERT_TRUE(end.record(stream).ok());
  EXPECT_FALSE(start.elapsed_milliseconds(end).ok());
  gate.open();
  end.synchronize();
  EXPECT_TRUE(start.elapsed_milliseconds(end).ok());
}

TEST(Event, RecordOnABlockingStreamCompletesAtOnce) {
  Stream stream(0, 0, /*blocking=*/true);
  Event start(true);
  Event end(true);
  ASSERT_TRUE(start.record(stream).ok());
  EXPECT_TRUE(start.query());
  busy_work(std::chrono::milliseconds(2));
  ASSERT_TRUE(end.record(stream).ok());
  EXPECT_TRUE(end.query());
  StatusOr<double> elapsed = start.elapsed_milliseconds(end);
  ASSERT_TRUE(elapsed.ok());
  EXPECT_GT(elapsed.value(), 0.0);
}

TEST(Event, MayBeDestroyedWhileItsMarkerIsQueued) {
  Stream stream(0, 1, false);
  Stream other(0, 2, false);
  Gate gate;
  ASSERT_TRUE(gate.hold(stream).ok());
  {
    Event event(true);
    ASSERT_TRUE(event.record(stream).ok());
    ASSERT_TRUE(event.block(other).ok());
  }  // destroyed while its marker and its wait are still queued
  EXPECT_FALSE(other.query());
  gate.open();
  EXPECT_TRUE(stream.synchronize().ok());
  EXPECT_TRUE(other.synchronize().ok());
}

TEST(Event, CopiesShareState) {
  Stream stream(0, 1, false);
  Gate gate;
  Event event;
  ASSERT_TRUE(gate.hold(stream).ok());
  ASSERT_TRUE(event.record(stream).ok());
  Event copy = event;
  EXPECT_TRUE(copy.was_recorded());
  EXPECT_FALSE(copy.query());
  gate.open();
  copy.synchronize();
  EXPECT_TRUE(event.query());
}

}  // namespace
}  // namespace kiln
