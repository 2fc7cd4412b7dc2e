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
      puts "text=#{text.headers['content-type']}"
      puts text.body
      json = mock.get("/c", "HTTP_X_MEMPROF" => "json")
      puts "json=#{json.headers['content-type']}"
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

  # The values in any case; `no`/`off` leave profiling off (before: they profiled), `JSON` is
  # JSON (before: text), and a value memprof does not know is said in x-memprof-error.
  def test_what_the_header_and_parameter_values_mean
    run_ruby(APP + <<~'RUBY') do |out|
      mock = Rack::MockRequest.new(Memprof::Middleware.new(app))
      %w[no off OFF False 0].each do |value|
        response = mock.get("/a", "HTTP_X_MEMPROF" => value)
        puts "#{value}: #{response.body} #{response.headers['x-memprof-error'].inspect}"
      end
      %w[JSON Json].each do |value|
        puts "#{value}: #{mock.get("/b?memprof=#{value}").headers['content-type']}"
      end
      %w[Yes ON True].each do |value|
        puts "#{value}: #{mock.get("/c", "HTTP_X_MEMPROF" => value).headers['content-type']}"
      end
      response = mock.get("/d", "HTTP_X_MEMPROF" => "please")
      puts "please: #{response.body} #{response.headers['x-memprof-error']}"
      response = mock.get("/e?a=1&memprof=bogus")
      puts "bogus: #{response.body} #{response.headers['x-memprof-error']}"
      # The parameter's value is percent-decoded (before: `%31` was an unknown value); one that
      # does not decode, or decodes to bytes that are not UTF-8, is an unknown value, not a 500.
      %w[%31 J%53ON y+ %%41 %ff].each do |value|
        response = mock.get("/f", "QUERY_STRING" => "memprof=#{value}")
        puts "#{value}: #{response.status} #{response.headers['content-type']} #{response.headers['x-memprof-error'].inspect}"
      end
      response = mock.get("/g", "HTTP_X_MEMPROF" => "\xff".b)
      puts "header \\xff: #{response.status} #{response.headers['x-memprof-error']}"
    RUBY
      assert_equal <<~TEXT, out
        no: hello nil
        off: hello nil
        OFF: hello nil
        False: hello nil
        0: hello nil
        JSON: application/json
        Json: application/json
        Yes: text/plain; charset=utf-8
        ON: text/plain; charset=utf-8
        True: text/plain; charset=utf-8
        please: hello unknown X-Memprof value "please" (1 or json profile, 0 does not); request not profiled
        bogus: hello unknown memprof= value "bogus" (1 or json profile, 0 does not); request not profiled
        %31: 200 text/plain; charset=utf-8 nil
        J%53ON: 200 application/json nil
        y+: 200 text/plain "unknown memprof= value \\"y \\" (1 or json profile, 0 does not); request not profiled"
        %%41: 200 text/plain "unknown memprof= value \\"%%41\\" (1 or json profile, 0 does not); request not profiled"
        %ff: 200 text/plain "unknown memprof= value \\"\\\\xFF\\" (1 or json profile, 0 does not); request not profiled"
        header \\xff: 200 unknown X-Memprof value "\\xFF" (1 or json profile, 0 does not); request not profiled
      TEXT
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
      puts "#{response.body} #{response.headers['x-memprof-error']}"
    RUBY
      assert_equal "hello memprof is already tracking; request not profiled\n", out
    end
  end

  # Two profiled requests at once on a threaded server: one gets the report, the other the
  # app's response with the x-memprof-error header (it used to get a report of 0 objects), and
  # GC is enabled again afterwards.
  def test_concurrent_profiled_requests_get_one_report_and_one_error_header
    run_ruby(<<~'RUBY') do |out|
      require "rack"
      require "rack/mock"
      app = lambda do |env|
        sleep 0.3
        [200, { "content-type" => "text/plain" }, ["hello #{env['PATH_INFO']}"]]
      end
      middleware = Memprof::Middleware.new(app)
      3.times do
        responses = %w[/a /b].map { |path| Thread.new { Rack::MockRequest.new(middleware).get("#{path}?memprof=1") } }.map(&:value)
        lines = responses.map do |r|
          objects = r.body[/\ATotal allocated: \d+ bytes \((\d+) objects\)/, 1]
          objects ? "report of objects: #{Integer(objects).positive?}" : "#{r.body.sub(/\/[ab]\z/, '')} #{r.headers['x-memprof-error']}"
        end
        puts "#{lines.sort.join(', ')}; started=#{Memprof.started?} gc_was_disabled=#{GC.enable}"
      end
    RUBY
      assert_equal "hello  memprof is already tracking; request not profiled, report of objects: true; " \
                   "started=false gc_was_disabled=false\n" * 3, out
    end
  end

  # A HEAD response has no body to carry the report: HEAD is passed through unprofiled (Rack's
  # Lint used to raise "Response body was given for HEAD request"), in both modes.
  def test_head_requests_are_passed_through
    run_ruby(APP + <<~'RUBY') do |out|
      require "rack/lint"
      inner = Rack::Lint.new(lambda { |env| [200, { "content-type" => "text/plain" }, env["REQUEST_METHOD"] == "HEAD" ? [] : ["x"]] })
      log = StringIO.new
      [Memprof::Middleware.new(inner), Memprof::Middleware.new(inner, logger: Logger.new(log))].each do |middleware|
        status, headers, body = Rack::Lint.new(middleware).call(Rack::MockRequest.env_for("/?memprof=1", method: "HEAD"))
        chunks = []
        body.each { |chunk| chunks << chunk }
        body.close
        puts "#{status} #{headers['content-type']} #{chunks.inspect} #{headers.key?('x-memprof-error')}"
      end
      puts "logged=#{log.string.inspect} started=#{Memprof.started?}"
    RUBY
      assert_equal "200 text/plain [] false\n200 text/plain [] false\nlogged=\"\" started=false\n", out
    end
  end

  # Rack's contract: the app's body is closed even when iterating it raises; the error
  # propagates, and tracking and GC are back as they were.
  def test_the_app_body_is_closed_when_its_each_raises
    run_ruby(APP + <<~'RUBY') do |out|
      body = Object.new
      def body.each
        yield "first"
        raise "broken body"
      end
      def body.close
        puts "closed"
      end
      begin
        Memprof::Middleware.new(->(_env) { [200, { "content-type" => "text/plain" }, body] })
                           .call(Rack::MockRequest.env_for("/?memprof=1"))
      rescue => e
        puts "#{e.class}: #{e.message}"
      end
      puts "started=#{Memprof.started?} gc_was_disabled=#{GC.enable}"
    RUBY
      assert_equal "closed\nRuntimeError: broken body\nstarted=false gc_was_disabled=false\n", out
    end
  end

  # A bad `top:` is refused when the middleware is set up, not on the first profiled request.
  def test_a_negative_top_is_refused_at_setup
    run_ruby(APP + <<~'RUBY') { |out| assert_equal "ArgumentError: Memprof::Middleware: top must be an Integer >= 0, not -1\n", out }
      begin
        Memprof::Middleware.new(app, top: -1)
      rescue ArgumentError => e
        puts "#{e.class}: #{e.message}"
      end
    RUBY
  end

  # Requests that do not ask are the app's alone: no parsing (a malformed query string is the
  # app's business), no keys added to the env.
  def test_unprofiled_requests_pass_through_untouched
    run_ruby(APP + <<~'RUBY') do |out|
      seen = nil
      spy = lambda do |env|
        seen = env.keys.sort
        [200, { "content-type" => "text/plain" }, ["#{env['QUERY_STRING']} ok"]]
      end
      env = -> { Rack::MockRequest.env_for("/").merge("QUERY_STRING" => "a=%%%&memprofx=1&xmemprof=1") }
      spy.call(env.call)
      alone = seen
      status, _headers, body = Memprof::Middleware.new(spy).call(env.call)
      puts "#{status} #{body.join}"
      puts seen == alone
    RUBY
      assert_equal "200 a=%%%&memprofx=1&xmemprof=1 ok\ntrue\n", out
    end
  end

  # The response the middleware returns (headers, body chunks) is not a leak of the request;
  # what the app kept is.
  def test_the_response_is_not_counted_as_retained
    run_ruby(APP + <<~'RUBY') do |out, _err, path|
      app = lambda do |env|
        LEAK << "leak"                                                        # line 11
        [200, { "content-type" => "text/plain", "x-id" => "id #{env['PATH_INFO']}" },    # line 12
         Rack::BodyProxy.new(["chunk #{env['PATH_INFO']}", "more #{env['PATH_INFO']}"]) { }]  # line 13
      end
      log = StringIO.new
      middleware = Memprof::Middleware.new(app, logger: Logger.new(log))
      response = Rack::MockRequest.new(middleware).get("/?memprof=json")
      report = JSON.parse(log.string[/\{"allocated".*\}/])
      mine = report["retained"]["by_location"].select { |r| r["location"].start_with?("#{__FILE__}:") }
      puts mine.map { |r| "#{r['location'].sub("#{__FILE__}:", 'L')} #{r['class']} #{r['count']}" }.join(", ")
      puts response.body
    RUBY
      retained, body = out.split("\n", 2)
      assert_equal "L11 String 1", retained
      assert_equal "chunk /more /\n", body
    end
  end

  # Rack 3's Lint rejects mixed-case response headers; the report's headers are lowercase.
  def test_report_response_passes_rack_lint
    run_ruby(APP + <<~'RUBY') do |out|
      require "rack/lint"
      inner = Rack::Lint.new(lambda { |env| [200, { "content-type" => "text/plain" }, ["x"]] })
      status, headers, body = Rack::Lint.new(Memprof::Middleware.new(inner)).call(Rack::MockRequest.env_for("/?memprof=1"))
      body.each { |chunk| chunk }
      body.close
      puts status, headers.keys.sort.inspect
    RUBY
      assert_equal "200\n[\"content-length\", \"content-type\"]\n", out
    end
  end

  # `require "memprof/middleware"` alone, as a config.ru may start, loads the gem it needs.
  def test_requiring_the_middleware_alone_loads_memprof
    run_ruby(<<~'RUBY', preload: false) do |out|
      require "memprof/middleware"
      require "rack/mock"
      app = lambda { |env| [200, { "content-type" => "text/plain" }, ["x" * 3]] }
      response = Rack::MockRequest.new(Memprof::Middleware.new(app)).get("/?memprof=1")
      puts response.status, response.body.lines.first
    RUBY
      assert_match(/\A200\nTotal allocated: \d+ bytes \(\d+ objects\)\n\z/, out)
    end
  end
end
