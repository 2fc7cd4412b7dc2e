# frozen_string_literal: true

require "json"
require "rack"
require_relative "catalog"
require_relative "event_bus"
require_relative "price_watcher"

module Shop
  # A Rack app that quotes a cart: GET /quote?items=tea:2,scone:1 answers with the priced
  # lines and the total as JSON. Each request allocates the usual short-lived objects (query
  # parsing, lines, JSON) and, through a bug, leaves one listener behind.
  class App
    EVENTS = EventBus.new

    def initialize
      @next_cart = 0
    end

    def call(env)
      request = Rack::Request.new(env)
      lines = parse_items(request.params.fetch("items", ""))
      return [400, { "content-type" => "text/plain" }, ["no known items\n"]] if lines.empty?

      @next_cart += 1
      total = lines.sum(&:total_cents)
      # The leak: a watcher per quote, subscribed and never unsubscribed.
      EVENTS.subscribe(:price_changed, PriceWatcher.new("cart-#{@next_cart}", total))
      [200, { "content-type" => "application/json" }, [render(lines, total)]]
    end

    private

    def parse_items(spec)
      spec.split(",").filter_map do |item|
        product, quantity = item.split(":", 2)
        price = CATALOG[product] or next
        Line.new(product, Integer(quantity || "1", exception: false) || 1, price)
      end
    end

    def render(lines, total)
      JSON.generate(
        "lines" => lines.map { |l| { "product" => l.product, "quantity" => l.quantity, "cents" => l.total_cents } },
        "total" => format("%d.%02d", total / 100, total % 100)
      )
    end
  end
end
