# frozen_string_literal: true

module Shop
  # A process-wide publish/subscribe list, as found in many apps: listeners stay registered
  # until someone unsubscribes them.
  class EventBus
    def initialize
      @listeners = Hash.new { |hash, event| hash[event] = [] }
    end

    def subscribe(event, listener)
      @listeners[event] << listener
      listener
    end

    def unsubscribe(event, listener)
      @listeners[event].delete(listener)
    end

    def publish(event, payload)
      @listeners[event].each { |listener| listener.call(payload) }
    end

    def listener_count(event)
      @listeners[event].size
    end
  end
end
