# frozen_string_literal: true

require_relative "test_helper"

# With YJIT the program counter the site cache reads is the one YJIT saves before calls that can
# allocate. From Ruby 3.3 on, the sites are the interpreter's on the same program, once the code
# is hot. On 3.1, YJIT saves the counter past a leaf instruction (duparray, ...) that gc.c then
# bumps once more, so Ruby's own NEWOBJ event -- and memory_profiler -- charge such a literal to
# the next line; the hooks do the same as the event there.
class YjitTest < Minitest::Test
  include MemprofTestHelper

  PROGRAM = <<~'RUBY'
    def f = nil
    def make(i)
      f
      a = [i]                                  # line 4
      s = "s#{i}"                              # line 5: the String and i.to_s
      h = { i => s }                           # line 6
      o = Object.new                           # line 7
      [a, s, h, o, "lit", [1, 2]]              # line 8
    end
    $k = []
    Memprof.start(mechanism: ARGV[0].to_sym)
    30_000.times { |i| $k << make(i) }         # enough calls for YJIT to compile make
    GC.start
    Memprof.stats($stdout)
    puts "yjit=#{defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled? ? 'on' : 'off'}"
  RUBY
  INTERPRETER = { "L4:Array" => 30_000, "L5:String" => 30_000, "L6:Hash" => 30_000,
                  "L7:Object" => 30_000, "L8:Array" => 60_000, "L8:String" => 30_000 }.freeze

  def sites(mechanism, yjit)
    run_ruby(PROGRAM, args: [mechanism], env: yjit ? { "RUBYOPT" => "--yjit" } : {}) do |out, _err, path|
      assert_includes out, "yjit=#{yjit ? 'on' : 'off'}\n"
      return stats_for(out, path)
    end
  end

  def test_yjit_attributes_like_the_interpreter_or_like_rubys_own_event
    yjit = `#{RbConfig.ruby} --yjit -e 'print defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?' 2>&1`
    skip "this Ruby has no YJIT (#{RUBY_VERSION})" unless yjit == "true"

    assert_equal INTERPRETER, sites("hooks", false)
    if Gem::Version.new(RUBY_VERSION) >= Gem::Version.new("3.3")
      assert_equal INTERPRETER, sites("hooks", true)
    else
      # How many calls run interpreted before YJIT compiles `make` varies from run to run; the
      # literal's objects are split between line 8 and 9 alike by the event and the hooks.
      moved = ->(sites) { sites.merge("L8:Array" => sites["L8:Array"] + sites.fetch("L9:Array", 0)).except("L9:Array") }
      event = sites("tracepoint", true)
      hooks = sites("hooks", true)
      assert_operator event.fetch("L9:Array", 0), :>, 0, "the NEWOBJ event moved no literal"
      assert_operator hooks.fetch("L9:Array", 0), :>, 0, "the hooks moved no literal"
      assert_equal INTERPRETER, moved.(event)
      assert_equal INTERPRETER, moved.(hooks)
    end
  end
end
