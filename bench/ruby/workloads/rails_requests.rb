# frozen_string_literal: true

require "rack/mock"
require_relative "source_line"

# Workload (b): the bench Rails app (bench/ruby/rails_app) booted in-process and serving a mix
# of requests through Rack::MockRequest: a JSON page of posts (ActiveRecord query with an
# include), an HTML post page (ERB, layout, helpers) and a form POST validated by ActiveModel,
# one valid and one invalid.
module RailsRequests
  REQUESTS = 2_000
  WARMUP_REQUESTS = 200

  # [method, path, Rack::MockRequest options, expected status]
  MIX = [
    ["GET", "/posts.json?page=1", {}, 200],
    ["GET", "/posts.json?page=3", {}, 200],
    ["GET", "/posts/7", {}, 200],
    ["GET", "/posts/31", {}, 200],
    ["POST", "/signups", { params: { signup: { name: "Ann", email: "ann@example.com", plan: "team" } } }, 201],
    ["POST", "/signups", { params: { signup: { name: "", email: "nope", plan: "gold" } } }, 422]
  ].freeze

  def self.description
    "Rails #{Rails.version} app: #{@requests} requests"
  end

  # The request log line that serve keeps for every request.
  KEPT_LINE = SourceLine.of(__FILE__, /^\s+log << /)

  def self.kept_site = "#{__FILE__}:#{KEPT_LINE}"

  def self.kept_count = @requests

  def self.prepare(scale)
    require_relative "../rails_app/config/environment"
    @session = Rack::MockRequest.new(Rails.application)
    @requests = (REQUESTS * scale).to_i
    serve(WARMUP_REQUESTS)
  end

  def self.run
    serve(@requests)
  end

  # Serves +count+ requests in MIX order and returns a log with one line per request (the
  # objects the workload keeps alive). Raises when any answer has another status, so a broken
  # app cannot pass for a fast one.
  def self.serve(count)
    log = []
    count.times do |i|
      verb, path, options, status = MIX[i % MIX.size]
      response = @session.request(verb, path, options)
      unless response.status == status
        raise "#{verb} #{path} answered #{response.status}, expected #{status}"
      end

      log << "#{verb} #{path} #{response.status}"
    end
    log
  end
end
