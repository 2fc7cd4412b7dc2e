# frozen_string_literal: true

# A small but ordinary Rails 6.1 application for the overhead benchmark: the full default
# middleware stack, ActiveRecord on an in-memory SQLite database, ERB views with a layout, JSON
# rendering and an ActiveModel form object with validations. It is booted in-process and
# driven through Rack::MockRequest, so no server or database process is involved.
ENV["RAILS_ENV"] = "production"

require "logger"
require "rails"
require "active_record/railtie"
require "action_controller/railtie"
require "action_view/railtie"

module BenchApp
  class Application < Rails::Application
    config.root = File.expand_path("..", __dir__)
    config.load_defaults 6.1
    config.eager_load = true
    config.cache_classes = true
    config.consider_all_requests_local = false
    config.secret_key_base = "bench-only-secret-key-base-" + "0" * 40
    config.hosts.clear
    # Production-like logging whose output nobody reads: the formatting work stays in the
    # measurement, the terminal stays quiet.
    config.logger = ActiveSupport::Logger.new(File::NULL)
    config.log_level = :info
  end
end
