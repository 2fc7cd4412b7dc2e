# frozen_string_literal: true

require "rack"
require "stringio"

module Memprof
  # Rack middleware that profiles one request when the request asks for it (off by default):
  # with the header `X-Memprof: 1` (or `json`), or the query parameter `memprof=1` (or
  # `memprof=json`). The app runs inside Memprof.report, its body is read inside the block
  # (streamed bodies allocate while they are iterated), and then:
  # - without a logger, the response is replaced by the report (text/plain, or
  #   application/json for `json`);
  # - with `logger:`, the report is logged (one #info call) and the app's response is returned.
  # Requests that do not ask are passed through untouched. While Memprof is already tracking
  # (Memprof.start), requests are passed through too, with an `X-Memprof-Error` header.
  #
  #   use Memprof::Middleware                     # report in the response
  #   use Memprof::Middleware, logger: Logger.new($stderr), top: 20
  class Middleware
    HEADER = "HTTP_X_MEMPROF"
    PARAM = "memprof"

    def initialize(app, logger: nil, top: 50)
      @app = app
      @logger = logger
      @top = top
    end

    def call(env)
      format = requested_format(env)
      return @app.call(env) unless format
      if Memprof.started?
        status, headers, body = @app.call(env)
        headers = headers.merge("X-Memprof-Error" => "memprof is already tracking; request not profiled")
        return [status, headers, body]
      end

      response = nil
      report = Memprof.report { response = buffered(@app.call(env)) }
      return respond_with(report, format) unless @logger

      @logger.info(render(report, format))
      response
    end

    private

    # "text", "json" or nil (not asked).
    def requested_format(env)
      value = env[HEADER] || Rack::Request.new(env).GET[PARAM]
      return nil if value.nil? || value.empty? || value == "0" || value == "false"

      value == "json" ? "json" : "text"
    end

    def buffered((status, headers, body))
      chunks = []
      body.each { |chunk| chunks << chunk }
      body.close if body.respond_to?(:close)
      [status, headers, chunks]
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
      [200, { "Content-Type" => type, "Content-Length" => text.bytesize.to_s }, [text]]
    end
  end
end
