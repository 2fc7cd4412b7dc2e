# frozen_string_literal: true

require_relative "test_helper"

# Memprof::Middleware with Debian's rack: off unless the request asks; the report replaces the
# response or goes to the logger.
class MiddlewareTest < Minitest::Test
  include MemprofTestHelper

  APP = <<~'RUBY'
    require "rack"
    require "rack/mock"
    require "logger"
    require "stringio"
    LEAK = []
    app = lambda do |env|
      LEAK << "leak #{env['PATH_INFO']}"                       # line 7
      [200, { "Content-Type" => "text/plain" }, ["hello"]]
    end
  RUBY

  def test_off_by_default_and_on_when_asked
    run_ruby(APP + <<~'RUBY') do |out, _err, path|
      mock = Rack::MockRequest.new(Memprof::Middleware.new(app))
      plain = mock.get("/a")
      puts "plain=#{plain.status} #{plain.body} #{plain.headers['Content-Type']}"
      text = mock.get("/b?memprof=1")
      puts "text=#{text.headers['Content-Type']}"
      puts text.body
      json = mock.get("/c", "HTTP_X_MEMPROF" => "json")
      puts "json=#{json.headers['Content-Type']}"
      puts json.body
      off = mock.get("/d?memprof=0")
      puts "off=#{off.body}"
    RUBY
      assert_includes out, "plain=200 hello text/plain\n"
      assert_includes out, "text=text/plain; charset=utf-8\n"
      assert_includes out, "retained objects by location\n-----------------------------------\n"
      assert_match(/^ +1  #{Regexp.escape(path)}:7$/, out)
      assert_includes out, "json=application/json\n"
      report = JSON.parse(out[/^\{"allocated".*$/])
      leak = report["retained"]["by_location"].find { |r| r["location"] == "#{path}:7" }
      assert_equal({ "location" => "#{path}:7", "class" => "String", "count" => 1, "bytes" => 40 }, leak)
      assert_includes out, "off=hello\n"
    end
  end

  def test_logger_mode_logs_and_returns_the_app_response
    run_ruby(APP + <<~'RUBY') do |out, _err, path|
      log = StringIO.new
      mock = Rack::MockRequest.new(Memprof::Middleware.new(app, logger: Logger.new(log)))
      response = mock.get("/x?memprof=1")
      puts "body=#{response.body}"
      puts log.string
    RUBY
      assert_includes out, "body=hello\n"
      assert_includes out, "Total allocated:"
      assert_match(/^ +1  #{Regexp.escape(path)}:7$/, out)
    end
  end

  def test_passes_through_while_memprof_is_already_tracking
    run_ruby(APP + <<~'RUBY') do |out|
      Memprof.start
      response = Rack::MockRequest.new(Memprof::Middleware.new(app)).get("/?memprof=1")
      puts "#{response.body} #{response.headers['X-Memprof-Error']}"
    RUBY
      assert_equal "hello memprof is already tracking; request not profiled\n", out
    end
  end
end
