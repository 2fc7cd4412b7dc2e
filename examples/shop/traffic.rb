# frozen_string_literal: true

require "rack/mock"
require_relative "app"

module Shop
  # Drives the app in-process with a fixed mix of quote requests, as a test or a load
  # generator would.
  class Traffic
    CARTS = ["tea:2,scone", "coffee,bagel:2,cookie:3", "juice,salad", "muffin:4"].freeze

    def initialize(app = App.new)
      @session = Rack::MockRequest.new(app)
    end

    # Serves +count+ requests; raises on any answer but 200.
    def serve(count)
      count.times do |i|
        response = @session.get("/quote?items=#{CARTS[i % CARTS.size]}")
        raise "quote answered #{response.status}: #{response.body}" unless response.status == 200
      end
      count
    end
  end
end
