# frozen_string_literal: true

begin
  require "rack"
rescue LoadError
  raise LoadError, "Memprof::Middleware needs the rack gem (add it to your Gemfile, or: gem install rack)"
end
require "stringio"
require "uri"
# `require "memprof/middleware"` alone (a config.ru may start so) needs the gem too.
require_relative "../memprof"

module Memprof
  # Rack middleware that profiles one request when the request asks for it (off by default):
  # with the header `X-Memprof: 1` (or `json`), or the query parameter `memprof=1` (or
  # `memprof=json`). The app runs inside Memprof.report, its body is read inside the block
  # (streamed bodies allocate while they are iterated), and then:
  # - without a logger, the response is replaced by the report (text/plain, or
  #   application/json for `json`);
  # - with `logger:`, the report is logged (one #info call) and the app's response is returned.
  # The response the middleware hands back (its header Hash and Strings, the body chunks) is
  # the middleware's to return, not something the request leaked, so it is not counted as
  # retained.
  #
  # Requests that do not ask are passed to the app untouched: the env is not parsed or changed.
  # So are HEAD requests: a HEAD response has no body to carry the report. While Memprof is
  # already tracking (Memprof.start, or another request being profiled: one tracker per
  # process), requests are passed through too, with an `x-memprof-error` header. Response
  # headers are lowercase, as Rack 3 requires.
  #
  #   use Memprof::Middleware                     # report in the response
  #   use Memprof::Middleware, logger: Logger.new($stderr), top: 20
  class Middleware
    HEADER = "HTTP_X_MEMPROF"
    PARAM = "memprof"
    # `memprof=VALUE` as a whole parameter of a raw query string (a separator or the start
    # before it). Only this value is decoded (`%31`, `+`), never the whole query string: an
    # unrelated malformed parameter must not make the request fail.
    PARAM_PATTERN = /(?:\A|[&;])memprof=([^&;]*)/.freeze

    def initialize(app, logger: nil, top: 50)
      Report.check_top(top, "Memprof::Middleware")
      @app = app
      @logger = logger
      @top = top
    end

    # The values of the header and the parameter, in any case: what turns profiling on (text
    # or JSON) and what leaves it off. Another value is answered by the app, unprofiled, with an
    # `x-memprof-error` naming the values (before: `no` and `off` profiled, `JSON` gave text).
    FORMATS = { "1" => "text", "true" => "text", "yes" => "text", "on" => "text", "text" => "text",
                "json" => "json",
                "0" => nil, "false" => nil, "no" => nil, "off" => nil, "" => nil }.freeze

    def call(env)
      value, asked_by = requested_value(env)
      return @app.call(env) if value.nil? || env["REQUEST_METHOD"] == "HEAD"

      format = FORMATS.fetch(value.b.strip.downcase) { return not_profiled(env, unknown_value(value, asked_by)) }
      return @app.call(env) if format.nil?

      response = nil
      app_called = false
      begin
        report = Memprof.send(:profile) do
          app_called = true
          response = buffered(@app.call(env))
          parts_of(response)
        end
      rescue AlreadyStartedError
        # Raised by the app itself: not ours to answer.
        raise if app_called

        return not_profiled(env, "memprof is already tracking; request not profiled")
      end
      return respond_with(report, format) unless @logger

      @logger.info(render(report, format))
      response
    end

    private

    # The header's value, else the parameter's, with where it came from; nil when neither is there.
    def requested_value(env)
      return [env[HEADER], "X-Memprof"] if env[HEADER]

      [decoded(env["QUERY_STRING"].to_s[PARAM_PATTERN, 1]), "memprof="]
    end

    # A value that is not valid percent-encoding (`memprof=%%`) is kept as written: it is then
    # an unknown value, said in x-memprof-error.
    def decoded(value)
      return value if value.nil? || !value.match?(/[%+]/)

      URI.decode_www_form_component(value)
    rescue ArgumentError
      value
    end

    def unknown_value(value, asked_by)
      shown = value.size > 40 ? "#{value[0, 40]}..." : value
      "unknown #{asked_by} value #{shown.inspect} (1 or json profile, 0 does not); request not profiled"
    end

    # Tracking is on already (Memprof.start, or a request profiled in another thread), or the
    # request asked with a value we do not know: the app answers, unprofiled, and `why` says so.
    def not_profiled(env, why)
      status, headers, body = @app.call(env)
      [status, headers.merge("x-memprof-error" => why), body]
    end

    # Rack's contract: the body is closed once it has been read, even if reading it failed.
    def buffered((status, headers, body))
      chunks = []
      body.each { |chunk| chunks << chunk }
      [status, headers, chunks]
    ensure
      body.close if body.respond_to?(:close)
    end

    # The objects of a buffered response: what the middleware keeps on purpose.
    def parts_of((_status, headers, chunks))
      [headers, *headers.to_a.flatten, *chunks]
    end

    def render(report, format)
      return report.to_json if format == "json"

      io = StringIO.new
      report.print(io, top: @top)
      io.string
    end

    def respond_with(report, format)
      type = format == "json" ? "application/json" : "text/plain; charset=utf-8"
      text = render(report, format)
      [200, { "content-type" => type, "content-length" => text.bytesize.to_s }, [text]]
    end
  end
end
