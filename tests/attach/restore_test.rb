# frozen_string_literal: true

# After detach every byte memprof patched reads back as it was before attach (issue 10, item 7),
# read from outside through /proc/PID/mem: with a shared libruby memprof replaces GOT slots (of
# libruby and of every C extension); with libruby linked into the executable it also rewrites
# `call` instructions in the executable's code. So this compares, before attach and after
# detach:
#   - every mapping of a file that is not writable (code, read-only data, and the RELRO part
#     where a -z now object keeps its GOT), whole;
#   - in the writable mappings, the GOT slots of every object (the offsets of its
#     JUMP_SLOT/GLOB_DAT relocations, from readelf): an object linked without -z now keeps
#     .got.plt writable.
# The target runs with LD_BIND_NOW=1, so that the dynamic loader has written every slot before
# the first snapshot (lazy binding would change a slot between the two on its own).
require_relative "attach_helper"

class AttachRestoreTest < Minitest::Test
  include AttachTestHelper

  Mapping = Struct.new(:start, :finish, :perms, :offset, :path)

  def mappings(pid)
    File.readlines("/proc/#{pid}/maps").filter_map do |line|
      range, perms, offset, _dev, _inode, path = line.split(" ", 6)
      path = path&.strip
      next unless path&.start_with?("/")

      start, finish = range.split("-").map { |hex| Integer(hex, 16) }
      Mapping.new(start, finish, perms, Integer(offset, 16), path)
    end
  end

  # Offsets (link-time addresses) of an ELF object's GOT slots.
  def got_offsets(path)
    @got_offsets ||= {}
    @got_offsets[path] ||= begin
      out, _err, status = Open3.capture3("readelf", "-rW", path)
      status.success? ? out.lines.grep(/R_X86_64_(JUMP_SLOT|GLOB_DAT)/).map { |l| Integer(l.split.first, 16) } : []
    end
  end

  # [path, address, length] of every region described above, as mapped now.
  def regions(pid)
    maps = mappings(pid)
    list = maps.filter_map do |m|
      [m.path, m.start, m.finish - m.start] if m.perms.start_with?("r") && !m.perms.include?("w")
    end
    maps.group_by(&:path).each do |path, parts|
      # The load base: where file offset 0 is mapped (shared objects and PIE executables).
      first = parts.find { |m| m.offset.zero? } or next
      writable = parts.select { |m| m.perms.start_with?("rw") }
      got_offsets(path).each do |offset|
        address = first.start + offset
        list << [path, address, 8] if writable.any? { |m| address >= m.start && address + 8 <= m.finish }
      end
    end
    list
  end

  # {[path, address] => bytes}, read through /proc/PID/mem (whatever the protections now).
  def read_regions(pid, list)
    File.open("/proc/#{pid}/mem", "rb") do |mem|
      list.to_h { |path, address, length| [[path, address], mem.pread(length, address)] }
    end
  end

  # {[path, address] => "r--p"}: the protection of every page of every region (a region may
  # span several mappings once memprof has changed part of it).
  def protections(pid, list)
    maps = mappings(pid)
    list.each_with_object({}) do |(path, address, length), out|
      (address...(address + length)).step(4096) do |page|
        m = maps.find { |entry| page >= entry.start && page < entry.finish }
        out[[path, page]] = m&.perms
      end
    end
  end

  def differences(before, after)
    before.filter_map do |(path, address), bytes|
      now = after[[path, address]]
      next if now == bytes

      first = (0...bytes.bytesize).find { |i| bytes.getbyte(i) != now.getbyte(i) }
      count = (0...bytes.bytesize).count { |i| bytes.getbyte(i) != now.getbyte(i) }
      format("%s: %d byte(s) differ in the region at 0x%x, the first at 0x%x", path, count,
             address, address + first)
    end
  end

  def check_restored(mode)
    target = spawn_target("target.rb", mode, env: { "LD_BIND_NOW" => "1" })
    target.wait_for(/\Aready #{target.pid}\z/)
    compared = regions(target.pid)
    before = read_regions(target.pid, compared)
    refute_empty before
    protected_before = protections(target.pid, compared)
    out = attach!(target)
    # It did patch something (else this test would prove nothing).
    assert_match(/hooks on [1-9]\d* GOT slots|[1-9]\d* call sites/, out)
    live_stats(target.pid)
    patched = differences(before, read_regions(target.pid, compared))
    refute_empty patched, "attach changed none of the compared bytes: the comparison misses them"
    detach!(target)
    after = read_regions(target.pid, compared)
    assert_empty differences(before, after), "bytes not restored by detach"
    changed = protections(target.pid, compared).reject { |key, perms| protected_before[key] == perms }
    assert_empty changed.keys, "page protections not restored by detach"
    # And once more: a second attach/detach restores them too.
    attach!(target)
    detach!(target)
    assert_empty differences(before, read_regions(target.pid, compared)), "bytes not restored by the second detach"
    assert_alive(target)
  end

  def test_patched_bytes_restored_while_sleeping
    check_restored("sleep")
  end

  def test_patched_bytes_restored_under_allocation_load
    check_restored("loop")
  end
end
