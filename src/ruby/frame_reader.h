// The attach agent's request pipe, read from memprof's Ruby thread (lib/memprof/agent.rb) into C
// memory while the GVL is released.
//
// Why not IO#read: Ruby reads into the String it will return while the GVL is released, and
// GC.compact on another thread can move that String meanwhile (nothing pins it); the read then
// lands in a freed heap page (EFAULT, seen on 3.4 under a GC.compact loop: the agent's thread
// died) or in a dead slot (the request is lost). Ruby 3.1's IO#write has the same fault.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/util/frame_length.h"

namespace memprof::ruby {

// A frame: its length (core/util/frame_length.h), then that many bytes. read_some() runs without
// the GVL and touches no Ruby object; it returns when the frame is complete, at end of file (none
// of the states below), on an error, when a signal interrupted the read (EINTR: the caller
// lets Ruby handle its interrupts -- Thread#kill, exit -- and calls it again; what was read is
// kept), or, given `idle_ms`, when nothing arrived for that long (the caller looks at the
// writer meanwhile: a forked child that may have hung) and calls it again.
class FrameReader {
 public:
  FrameReader(int fd, size_t max_bytes) : fd_(fd), max_bytes_(max_bytes) {}

  void read_some(int idle_ms = -1) noexcept;

  bool complete() const { return header_done() && data_.size() == announced_; }
  bool idle() const { return error_ == ETIMEDOUT; }
  bool interrupted() const { return error_ == EINTR; }
  int error() const { return error_; }  // errno of a failed read (ETIMEDOUT: idle), 0 if none
  bool too_big() const { return too_big_; }
  size_t announced_bytes() const { return announced_; }
  void clear_interruption() { error_ = 0; }  // after interrupted() or idle()
  const std::string& payload() const { return data_; }

 private:
  int fd_;
  size_t max_bytes_;
  bool header_done() const { return header_read_ == sizeof header_; }

  unsigned char header_[util::kFrameLengthBytes] = {};
  size_t header_read_ = 0;
  size_t announced_ = 0;
  std::string data_;
  bool too_big_ = false;
  int error_ = 0;
};

}  // namespace memprof::ruby
